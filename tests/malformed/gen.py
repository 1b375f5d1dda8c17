#!/usr/bin/env python3
"""Writes the generated inputs of the malformed suite and the small fuzz
seeds: GGUF and ONNX files (binary, built field by field here) and the
config.json files.  The XML files are written by hand.

    python3 tests/malformed/gen.py

The outputs are committed; rerunning the script rewrites them unchanged.
Each file is small: the largest are the nesting bombs (a few hundred KB
would be needed to overflow a stack, so they are compressed by repetition
into ~100-300 KB).  MANIFEST lists the expected error of every file.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, '..', 'fuzz', 'seeds')


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode('utf-8')
    with open(os.path.join(folder, name), 'wb') as f:
        f.write(data)


# ---------------------------------------------------------------- GGUF --

T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, \
    T_U64, T_I64, T_F64 = range(13)


class Gguf:
    def __init__(self, version=3, be=False):
        self.e = '>' if be else '<'
        self.version = version
        self.kv = []
        self.tensors = []
        self.n_kv = None
        self.n_tensors = None

    def s(self, text):
        b = text if isinstance(text, bytes) else text.encode()
        return struct.pack(self.e + 'Q', len(b)) + b

    def val(self, t, v):
        e = self.e
        if t == T_STR:
            return self.s(v)
        if t == T_ARR:
            et, items = v
            out = struct.pack(e + 'IQ', et, len(items))
            for it in items:
                out += self.val(et, it)
            return out
        fmt = {T_U8: 'B', T_I8: 'b', T_U16: 'H', T_I16: 'h', T_U32: 'I',
               T_I32: 'i', T_F32: 'f', T_BOOL: 'B', T_U64: 'Q', T_I64: 'q',
               T_F64: 'd'}[t]
        return struct.pack(e + fmt, v)

    def add(self, key, t, v):
        self.kv.append(self.s(key) + struct.pack(self.e + 'I', t)
                       + self.val(t, v))
        return self

    def raw_kv(self, data):
        self.kv.append(data)
        return self

    def tensor(self, name, dims, ggml_type=0, offset=0):
        e = self.e
        b = self.s(name) + struct.pack(e + 'I', len(dims))
        for d in dims:
            b += struct.pack(e + 'Q', d & 0xffffffffffffffff)
        b += struct.pack(e + 'IQ', ggml_type, offset)
        self.tensors.append(b)
        return self

    def bytes(self, data_size=0, align=32):
        e = self.e
        n_t = len(self.tensors) if self.n_tensors is None else self.n_tensors
        n_kv = len(self.kv) if self.n_kv is None else self.n_kv
        out = b'GGUF' + struct.pack(e + 'IQQ', self.version, n_t, n_kv)
        out += b''.join(self.kv) + b''.join(self.tensors)
        if data_size:
            out += b'\0' * ((-len(out)) % align) + b'\0' * data_size
        return out


def tiny_llama(arch='llama', tokens=8, **over):
    g = Gguf(**over)
    g.add('general.architecture', T_STR, arch)
    g.add(arch + '.block_count', T_U32, 2)
    g.add(arch + '.embedding_length', T_U32, 64)
    g.add(arch + '.feed_forward_length', T_U32, 128)
    g.add(arch + '.attention.head_count', T_U32, 4)
    g.add(arch + '.attention.head_count_kv', T_U32, 2)
    g.add(arch + '.context_length', T_U32, 256)
    g.add('tokenizer.ggml.tokens', T_ARR,
          (T_STR, ['t%d' % i for i in range(tokens)]))
    return g


def gguf_files():
    d = os.path.join(HERE, 'gguf')
    good = tiny_llama()
    good.tensor('token_embd.weight', [64, 8], 0, 0)
    good.tensor('output.weight', [64, 8], 1, 2048)
    ok = good.bytes(data_size=2048 + 1024)

    # Seeds for the fuzzer: small valid files of several shapes.
    write(os.path.join(SEEDS, 'gguf'), 'tiny-llama.gguf', ok)
    write(os.path.join(SEEDS, 'gguf'), 'tiny-llama-be.gguf',
          tiny_llama(be=True).tensor('token_embd.weight', [64, 8])
          .bytes(data_size=2048))
    g = tiny_llama('gpt2')
    g.add('general.alignment', T_U32, 64)
    g.add('general.file_type', T_U32, 1)
    g.tensor('position_embd.weight', [64, 256], 1, 0)
    g.tensor('blk.0.attn_q.bias', [64], 0, 32768)
    write(os.path.join(SEEDS, 'gguf'), 'tiny-gpt2.gguf',
          g.bytes(data_size=32768 + 256, align=64))
    g = tiny_llama('gemma2', version=2)
    g.add('gemma2.attention.sliding_window', T_U32, 64)
    g.add('gemma2.attention.key_length', T_U32, 32)
    g.add('nested', T_ARR, (T_ARR, [(T_I16, [1, -2]), (T_BOOL, [1, 0])]))
    g.add('pi', T_F64, 3.14)
    g.tensor('blk.0.ffn_up.weight', [256, 2], 12, 0)
    write(os.path.join(SEEDS, 'gguf'), 'tiny-gemma2.gguf',
          g.bytes(data_size=288))

    write(d, 'empty.gguf', b'')
    write(d, 'three-bytes.gguf', b'GGU')
    write(d, 'bad-magic.gguf', b'GGML' + ok[4:])
    write(d, 'onnx-not-gguf.gguf', b'\x08\x07\x12\x07pytorch' + ok[16:64])
    write(d, 'version-1.gguf', tiny_llama(version=1).bytes())
    write(d, 'version-99.gguf', tiny_llama(version=99).bytes())
    write(d, 'truncated-header.gguf', ok[:13])
    write(d, 'truncated-metadata.gguf', ok[:100])
    write(d, 'truncated-tensor-infos.gguf', ok[:len(ok) - 3072 - 20])
    g = tiny_llama()
    g.n_kv = 1 << 60
    write(d, 'absurd-kv-count.gguf', g.bytes())
    g = tiny_llama()
    g.n_tensors = (1 << 64) - 1
    write(d, 'absurd-tensor-count.gguf', g.bytes())
    g = Gguf()
    g.raw_kv(struct.pack('<Q', 1 << 62) + b'general.architecture')
    write(d, 'absurd-key-length.gguf', g.bytes())
    write(d, 'key-invalid-utf8.gguf',
          Gguf().add('general.\xff'.encode('latin-1').decode('latin-1'),
                     T_STR, 'x').bytes().replace(b'general.\xc3\xbf',
                                                 b'general.\xff\xfe'))
    write(d, 'key-with-nul.gguf',
          Gguf().add('general.arch\0itecture', T_STR, 'llama').bytes())
    write(d, 'duplicate-key.gguf',
          tiny_llama().add('llama.block_count', T_U32, 3).bytes())
    write(d, 'unknown-value-type.gguf',
          Gguf().raw_kv(Gguf().s('x') + struct.pack('<I', 99)).bytes())
    write(d, 'bool-is-two.gguf', tiny_llama().add('flag', T_BOOL, 2).bytes())
    g = tiny_llama()
    g.raw_kv(g.s('arr') + struct.pack('<IIQ', T_ARR, 77, 1))
    write(d, 'array-unknown-elem-type.gguf', g.bytes())
    g = tiny_llama()
    g.raw_kv(g.s('arr') + struct.pack('<IIQ', T_ARR, T_U64, 1 << 61))
    write(d, 'array-absurd-count.gguf', g.bytes())
    # 40 nested arrays of one element each, then a u8.
    nest = struct.pack('<I', T_U8) + struct.pack('<Q', 1) + b'\x01'
    for _ in range(40):
        nest = struct.pack('<I', T_ARR) + struct.pack('<Q', 1) + nest
    g = tiny_llama()
    g.raw_kv(g.s('deep') + struct.pack('<I', T_ARR) + nest)
    write(d, 'array-nesting-40.gguf', g.bytes())
    write(d, 'alignment-not-power-of-two.gguf',
          tiny_llama().add('general.alignment', T_U32, 48).bytes())
    write(d, 'alignment-is-string.gguf',
          tiny_llama().add('general.alignment', T_STR, '32').bytes())
    write(d, 'tensor-zero-dim.gguf',
          tiny_llama().tensor('token_embd.weight', [64, 0]).bytes(64))
    write(d, 'tensor-negative-dim.gguf',
          tiny_llama().tensor('token_embd.weight', [64, -8]).bytes(64))
    write(d, 'tensor-dims-overflow.gguf',
          tiny_llama().tensor('token_embd.weight',
                              [1 << 32, 1 << 32, 1 << 32]).bytes(64))
    write(d, 'tensor-rank-5.gguf',
          tiny_llama().tensor('token_embd.weight', [2, 2, 2, 2, 2])
          .bytes(64))
    write(d, 'tensor-removed-type.gguf',
          tiny_llama().tensor('token_embd.weight', [64, 8], 4).bytes(2048))
    write(d, 'tensor-unknown-type.gguf',
          tiny_llama().tensor('token_embd.weight', [64, 8], 1000)
          .bytes(2048))
    write(d, 'tensor-misaligned-offset.gguf',
          tiny_llama().tensor('token_embd.weight', [64, 8], 0, 3)
          .bytes(4096))
    write(d, 'tensor-past-eof.gguf',
          tiny_llama().tensor('token_embd.weight', [64, 8], 0, 0)
          .bytes(1024))
    write(d, 'tensors-overlap.gguf',
          tiny_llama().tensor('token_embd.weight', [64, 8], 0, 0)
          .tensor('output.weight', [64, 8], 0, 1024).bytes(4096))
    write(d, 'tensor-duplicate-name.gguf',
          tiny_llama().tensor('token_embd.weight', [64, 8], 0, 0)
          .tensor('token_embd.weight', [64, 8], 0, 2048).bytes(4096))
    write(d, 'tensor-row-not-block-multiple.gguf',
          tiny_llama().tensor('token_embd.weight', [33, 8], 2).bytes(4096))
    write(d, 'tensor-name-invalid-utf8.gguf',
          tiny_llama().tensor(b'tok\xc0\xafembd', [64, 8]).bytes(2048))
    g = Gguf().add('llama.block_count', T_U32, 2)
    write(d, 'missing-architecture.gguf', g.bytes())
    write(d, 'unknown-architecture.gguf',
          tiny_llama('mamba').bytes())
    write(d, 'architecture-not-string.gguf',
          Gguf().add('general.architecture', T_U32, 7).bytes())
    g = tiny_llama()
    g.kv[1] = g.s('llama.block_count') + struct.pack('<I', T_U32) \
        + struct.pack('<I', 0)
    write(d, 'zero-layers.gguf', g.bytes())
    g = tiny_llama()
    g.kv[1] = g.s('llama.block_count') + struct.pack('<I', T_STR) \
        + g.s('two')
    write(d, 'layers-is-string.gguf', g.bytes())
    g = tiny_llama()
    g.kv[4] = g.s('llama.attention.head_count') + struct.pack('<I', T_I32) \
        + struct.pack('<i', -4)
    write(d, 'negative-head-count.gguf', g.bytes())
    g = tiny_llama()
    g.kv[5] = g.s('llama.attention.head_count_kv') \
        + struct.pack('<I', T_U32) + struct.pack('<I', 3)
    write(d, 'kv-heads-not-dividing.gguf', g.bytes())
    g = tiny_llama()
    g.kv[2] = g.s('llama.embedding_length') + struct.pack('<I', T_U64) \
        + struct.pack('<Q', 1 << 40)
    write(d, 'absurd-hidden-size.gguf', g.bytes())
    write(d, 'no-vocabulary.gguf', tiny_llama(tokens=0).bytes())
    be = tiny_llama(be=True).bytes()
    write(d, 'big-endian-truncated.gguf', be[:len(be) - 5])


# ---------------------------------------------------------------- ONNX --

def varint(n):
    n &= 0xffffffffffffffff
    out = b''
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def f_varint(field, n):
    return varint(field << 3) + varint(n)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint((field << 3) | 2) + varint(len(data)) + data


def f_float(field, x):
    return varint((field << 3) | 5) + struct.pack('<f', x)


def dim(v):
    if isinstance(v, str):
        return f_bytes(2, v)
    return f_varint(1, v)


def tensor_type(elem, dims):
    shape = b''.join(f_bytes(1, dim(x)) for x in dims)
    return f_bytes(1, f_varint(1, elem) + f_bytes(2, shape))


def value_info(name, elem=1, dims=(2, 3)):
    return f_bytes(1, name) + f_bytes(2, tensor_type(elem, dims))


def tensor(name, dims, dtype=1, raw=None, extra=b''):
    out = b''.join(f_varint(1, x) for x in dims) + f_varint(2, dtype)
    out += f_bytes(8, name)
    if raw is not None:
        out += f_bytes(9, raw)
    return out + extra


def attr_ints(name, values):
    return f_bytes(1, name) + f_varint(20, 7) \
        + b''.join(f_varint(8, v) for v in values)


def node(op, inputs, outputs, name='', attrs=(), domain=None):
    out = b''.join(f_bytes(1, i) for i in inputs)
    out += b''.join(f_bytes(2, o) for o in outputs)
    if name:
        out += f_bytes(3, name)
    out += f_bytes(4, op)
    out += b''.join(f_bytes(5, a) for a in attrs)
    if domain is not None:
        out += f_bytes(7, domain)
    return out


def graph(nodes=(), inputs=(), outputs=(), inits=(), name='g'):
    out = b''.join(f_bytes(1, n) for n in nodes) + f_bytes(2, name)
    out += b''.join(f_bytes(5, t) for t in inits)
    out += b''.join(f_bytes(11, v) for v in inputs)
    out += b''.join(f_bytes(12, v) for v in outputs)
    return out


def model(g, opset=13, ir=7, domain='', extra=b''):
    out = f_varint(1, ir) + f_bytes(2, 'elk-malformed')
    out += f_bytes(8, (f_bytes(1, domain) if domain else b'')
                   + f_varint(2, opset))
    if g is not None:
        out += f_bytes(7, g)
    return out + extra


def matmul_graph(**kw):
    w = tensor('W', [3, 4], raw=b'\0' * 48)
    return graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                 [value_info('x', 1, (2, 3))], [value_info('y', 1, (2, 4))],
                 [w], **kw)


def onnx_files():
    d = os.path.join(HERE, 'onnx')
    ok = model(matmul_graph())
    write(os.path.join(SEEDS, 'onnx'), 'matmul.onnx', ok)
    sym = graph([node('MatMul', ['x', 'W'], ['h'], 'mm'),
                 node('Relu', ['h'], ['r'], 'act'),
                 node('Reshape', ['r', 'shape'], ['y'], 'rs')],
                [value_info('x', 1, ('batch', 3))],
                [value_info('y', 1, ('batch', 2, 2))],
                [tensor('W', [3, 4], raw=b'\0' * 48),
                 tensor('shape', [3], 7, raw=struct.pack('<3q', -1, 2, 2))])
    write(os.path.join(SEEDS, 'onnx'), 'symbolic-reshape.onnx', model(sym))

    write(d, 'empty.onnx', b'')
    write(d, 'text.onnx', 'this is not a protobuf file at all\n')
    write(d, 'gguf-not-onnx.onnx', b'GGUF\x03\x00\x00\x00' + b'\0' * 16)
    write(d, 'truncated.onnx', ok[:len(ok) // 2])
    write(d, 'wrong-wire-type.onnx', b'\x0f\xff\xff')
    write(d, 'no-graph.onnx', model(None))
    write(d, 'ir-version-99.onnx', model(matmul_graph(), ir=99))
    write(d, 'opset-99.onnx', model(matmul_graph(), opset=99))
    write(d, 'no-default-opset.onnx',
          model(matmul_graph(), domain='com.example'))
    cyc = graph([node('Add', ['x', 'b'], ['a'], 'n1'),
                 node('Add', ['a', 'x'], ['b'], 'n2')],
                [value_info('x')], [value_info('b')])
    write(d, 'cycle.onnx', model(cyc))
    self_loop = graph([node('Relu', ['a'], ['a'], 'loop')],
                      [value_info('x')], [value_info('a')])
    write(d, 'self-loop.onnx', model(self_loop))
    write(d, 'dangling-input.onnx',
          model(graph([node('Relu', ['nowhere'], ['y'], 'r')],
                      [value_info('x')], [value_info('y')])))
    write(d, 'dangling-output.onnx',
          model(graph([node('Relu', ['x'], ['y'], 'r')],
                      [value_info('x')], [value_info('missing')])))
    write(d, 'duplicate-output.onnx',
          model(graph([node('Relu', ['x'], ['y'], 'r1'),
                       node('Relu', ['x'], ['y'], 'r2')],
                      [value_info('x')], [value_info('y')])))
    w = tensor('W', [3, 4], raw=b'\0' * 48)
    write(d, 'duplicate-initializer.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x')], [value_info('y', 1, (2, 4))],
                      [w, w])))
    write(d, 'unknown-op.onnx',
          model(graph([node('FooBar', ['x'], ['y'], 'f')],
                      [value_info('x')], [value_info('y')])))
    write(d, 'custom-domain-op.onnx',
          model(graph([node('Relu', ['x'], ['y'], 'r', domain='com.acme')],
                      [value_info('x')], [value_info('y')])))
    write(d, 'node-without-op-type.onnx',
          model(graph([f_bytes(1, 'x') + f_bytes(2, 'y')],
                      [value_info('x')], [value_info('y')])))
    write(d, 'initializer-negative-dim.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x')], [value_info('y', 1, (2, 4))],
                      [tensor('W', [3, -4], raw=b'')])))
    write(d, 'input-negative-dim.onnx',
          model(graph([node('Relu', ['x'], ['y'], 'r')],
                      [value_info('x', 1, (2, -3))], [value_info('y')])))
    write(d, 'initializer-absurd-dims.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x')], [value_info('y', 1, (2, 4))],
                      [tensor('W', [1 << 31, 1 << 31], raw=b'')])))
    write(d, 'initializer-dims-overflow.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x')], [value_info('y', 1, (2, 4))],
                      [tensor('W', [1 << 62, 1 << 62, 16], raw=b'')])))
    write(d, 'initializer-short-data.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x')], [value_info('y', 1, (2, 4))],
                      [tensor('W', [3, 4], raw=b'\0' * 47)])))
    write(d, 'initializer-unknown-dtype.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x')], [value_info('y', 1, (2, 4))],
                      [tensor('W', [3, 4], 99, raw=b'\0' * 48)])))
    write(d, 'initializer-no-name.onnx',
          model(graph([node('Relu', ['x'], ['y'], 'r')],
                      [value_info('x')], [value_info('y')],
                      [f_varint(1, 2) + f_varint(2, 1)])))
    ext = lambda loc: tensor('W', [3, 4], extra=f_bytes(13, f_bytes(1, 'location') + f_bytes(2, loc)) + f_varint(14, 1))
    write(d, 'external-data-absolute.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x')], [value_info('y', 1, (2, 4))],
                      [ext('/etc/passwd')])))
    write(d, 'external-data-parent.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x')], [value_info('y', 1, (2, 4))],
                      [ext('../../etc/passwd')])))
    write(d, 'external-data-missing.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x')], [value_info('y', 1, (2, 4))],
                      [ext('no-such-file.bin')])))
    write(d, 'rank-17.onnx',
          model(graph([node('Relu', ['x'], ['y'], 'r')],
                      [value_info('x', 1, (1,) * 17)], [value_info('y')])))
    write(d, 'matmul-shape-mismatch.onnx',
          model(graph([node('MatMul', ['x', 'W'], ['y'], 'mm')],
                      [value_info('x', 1, (2, 5))],
                      [value_info('y', 1, (2, 4))],
                      [tensor('W', [3, 4], raw=b'\0' * 48)])))
    write(d, 'unbound-symbolic-dim.onnx',
          model(graph([node('Relu', ['x'], ['y'], 'r')],
                      [value_info('x', 1, ('mystery', 3))],
                      [value_info('y')])))
    write(d, 'transpose-bad-perm.onnx',
          model(graph([node('Transpose', ['x'], ['t'], 't',
                            [attr_ints('perm', [0, 0])]),
                       node('Relu', ['t'], ['y'], 'r')],
                      [value_info('x')], [value_info('y')])))
    write(d, 'reshape-zero-and-negative.onnx',
          model(graph([node('Reshape', ['x', 's'], ['t'], 'rs'),
                       node('Relu', ['t'], ['y'], 'r')],
                      [value_info('x')], [value_info('y')],
                      [tensor('s', [2], 7,
                              raw=struct.pack('<2q', -1, -1))])))
    write(d, 'op-type-invalid-utf8.onnx',
          model(graph([node(b'Rel\xff\xfe', ['x'], ['y'], 'r')],
                      [value_info('x')], [value_info('y')])))
    write(d, 'only-layout-ops.onnx',
          model(graph([node('Identity', ['x'], ['y'], 'id')],
                      [value_info('x')], [value_info('y')])))

    # A TypeProto nested 50000 deep (sequence of sequence of ...): the
    # protobuf decoder recurses once per level.
    t = tensor_type(1, (2,))
    for _ in range(50000):
        t = f_bytes(4, f_bytes(1, t))
    write(d, 'nested-type-50000.onnx',
          model(graph([node('Relu', ['x'], ['y'], 'r')],
                      [f_bytes(1, 'x') + f_bytes(2, t)],
                      [value_info('y')])))
    # An If node whose then-branch holds an If node whose ... 20000 deep.
    g = graph([node('Relu', ['x'], ['y'], 'r')], [value_info('x')],
              [value_info('y')])
    for _ in range(20000):
        attr = f_bytes(1, 'then_branch') + f_varint(20, 5) + f_bytes(6, g)
        g = f_bytes(1, node('If', ['c'], ['y'], '', [attr]))
    write(d, 'nested-subgraph-20000.onnx',
          model(graph([node('If', ['c'], ['y'], 'if',
                            [f_bytes(1, 'then_branch') + f_varint(20, 5)
                             + f_bytes(6, g)])],
                      [value_info('c', 9, ())], [value_info('y')])))


# ---------------------------------------------------------- config.json --

LLAMA = ('"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,'
         ' "num_attention_heads": 4, "intermediate_size": 128,'
         ' "vocab_size": 100, "max_position_embeddings": 256')


def json_files():
    d = os.path.join(HERE, 'json')
    write(d, 'empty.json', '')
    write(d, 'not-json.json', 'model_type = llama\n')
    write(d, 'array-root.json', '[' + '{' + LLAMA + '}]\n')
    write(d, 'string-root.json', '"llama"\n')
    write(d, 'truncated.json', '{' + LLAMA[:60])
    write(d, 'trailing-comma.json', '{' + LLAMA + ',}\n')
    write(d, 'invalid-utf8.json',
          b'{' + LLAMA.encode() + b', "name": "\xff\xfe\xc0\xaf"}\n')
    write(d, 'nul-byte.json', b'{' + LLAMA.encode() + b'\0}\n')
    write(d, 'duplicate-key.json',
          '{' + LLAMA + ', "hidden_size": 4096}\n')
    write(d, 'duplicate-nested-key.json',
          '{' + LLAMA + ', "rope_scaling": {"type": "linear", '
          '"type": "dynamic"}}\n')
    write(d, 'missing-model-type.json',
          '{' + LLAMA.replace('"model_type": "llama", ', '') + '}\n')
    write(d, 'unknown-model-type.json',
          '{' + LLAMA.replace('"llama"', '"mamba"') + '}\n')
    write(d, 'model-type-number.json',
          '{' + LLAMA.replace('"llama"', '7') + '}\n')
    write(d, 'negative-layers.json',
          '{' + LLAMA.replace('"num_hidden_layers": 2',
                              '"num_hidden_layers": -2') + '}\n')
    write(d, 'zero-layers.json',
          '{' + LLAMA.replace('"num_hidden_layers": 2',
                              '"num_hidden_layers": 0') + '}\n')
    write(d, 'hidden-is-string.json',
          '{' + LLAMA.replace('"hidden_size": 64', '"hidden_size": "64"')
          + '}\n')
    write(d, 'hidden-is-fraction.json',
          '{' + LLAMA.replace('"hidden_size": 64', '"hidden_size": 64.5')
          + '}\n')
    write(d, 'absurd-hidden.json',
          '{' + LLAMA.replace('"hidden_size": 64',
                              '"hidden_size": 1099511627776') + '}\n')
    write(d, 'int64-overflow.json',
          '{' + LLAMA.replace('"hidden_size": 64',
                              '"hidden_size": 99999999999999999999999')
          + '}\n')
    write(d, 'heads-not-dividing.json',
          '{' + LLAMA.replace('"num_attention_heads": 4',
                              '"num_attention_heads": 5') + '}\n')
    write(d, 'kv-heads-zero.json',
          '{' + LLAMA + ', "num_key_value_heads": 0}\n')
    write(d, 'unknown-dtype.json',
          '{' + LLAMA + ', "torch_dtype": "float8"}\n')
    write(d, 'bool-is-string.json',
          '{' + LLAMA + ', "tie_word_embeddings": "yes"}\n')
    write(d, 'missing-context.json',
          '{' + LLAMA.replace(', "max_position_embeddings": 256', '')
          + '}\n')
    write(d, 'vit-zero-patch.json',
          '{"model_type": "vit", "num_hidden_layers": 2, "hidden_size": 64,'
          ' "num_attention_heads": 4, "intermediate_size": 256,'
          ' "patch_size": 0, "num_labels": 10}\n')
    write(d, 'vit-patch-overflow.json',
          '{"model_type": "vit", "num_hidden_layers": 2, "hidden_size": 64,'
          ' "num_attention_heads": 4, "intermediate_size": 256,'
          ' "image_size": 8589934592, "patch_size": 4294967296,'
          ' "num_channels": 4294967296, "num_labels": 10}\n')
    write(d, 'gpt2-ffn-overflow.json',
          '{"model_type": "gpt2", "n_layer": 2, "n_embd": 4611686018427387904,'
          ' "n_head": 4, "vocab_size": 100, "n_positions": 128}\n')
    write(d, 'deep-nesting.json',
          '{' + LLAMA + ', "x": ' + '[' * 100000 + ']' * 100000 + '}\n')


if __name__ == '__main__':
    gguf_files()
    onnx_files()
    json_files()
