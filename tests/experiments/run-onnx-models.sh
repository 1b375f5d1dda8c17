#!/bin/sh
# Issue 8's end-to-end check: elk-run compiles ResNet-50 and ViT-B/16 for
# one IPU chip and BERT-base (sequence 128) with every scheduler, from the
# real ONNX files in ../shared/corpus.  Skips (exit 77) without the corpus.
#
#   run-onnx-models.sh ELK_RUN
set -eu
elk_run=$1
models=${ELK_CORPUS:-}/onnx/torch-generated
if [ ! -d "$models" ]; then
  echo "SKIP: no ONNX corpus at '$models'"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for model in resnet50_graphonly vit_b_16_graphonly bert_base_encoder_graphonly; do
  cat > "$work/$model.xml" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<experiment format="1" name="$model">
  <frontend name="onnx">
    <param name="model">$models/$model.onnx</param>
    <param name="dtype">fp16</param>
  </frontend>
  <chip name="analytic">
    <param name="chips">1</param>
    <param name="cores">1472</param>
  </chip>
  <allocator name="reservation"/>
  <scheduler name="basic" label="basic"/>
  <scheduler name="static" label="static"/>
  <scheduler name="elk" label="elk-dyn"><param name="order-search">dyn</param></scheduler>
  <scheduler name="elk" label="elk-full"><param name="order-search">full</param></scheduler>
  <scheduler name="ideal" bound="true" label="ideal"/>
</experiment>
XML
  "$elk_run" "$work/$model.xml" -q --no-report -o "$work/out-$model"
  csv=$work/out-$model/results.csv
  ok=$(tail -n +2 "$csv" | awk -F, '$33 == "ok"' | wc -l)
  [ "$ok" -eq 5 ] || { echo "$model: only $ok of 5 designs ran"; cat "$csv"; exit 1; }
  echo "$model: $(tail -n +2 "$csv" | awk -F, '{ printf "%s %.4g ms  ", $32, $17 * 1000 }')"
done
