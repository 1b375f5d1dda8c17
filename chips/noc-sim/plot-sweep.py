#!/usr/bin/env python3
"""plot-sweep.py: line plots of an elk-run results.csv as a standalone SVG.

    plot-sweep.py results.csv X-COLUMN Y-COLUMN out.svg [--group COL ...]
                  [--title T] [--xscale F] [--yscale F] [--xlabel L] [--ylabel L]

One line per distinct combination of the --group columns (default:
topology and scheduler).  Needs nothing beyond the standard library.
"""
import argparse, csv, html

ap = argparse.ArgumentParser()
ap.add_argument('csv'); ap.add_argument('x'); ap.add_argument('y'); ap.add_argument('out')
ap.add_argument('--group', nargs='*', default=['topology', 'scheduler'])
ap.add_argument('--title', default='')
ap.add_argument('--xscale', type=float, default=1.0)
ap.add_argument('--yscale', type=float, default=1.0)
ap.add_argument('--xlabel', default=None); ap.add_argument('--ylabel', default=None)
ap.add_argument('--logy', action='store_true')
a = ap.parse_args()

import math
series = {}
for r in csv.DictReader(open(a.csv)):
    if r.get('status', 'ok') != 'ok':
        continue
    key = ' / '.join(r[g] for g in a.group)
    series.setdefault(key, []).append((float(r[a.x]) * a.xscale, float(r[a.y]) * a.yscale))
for k in series:
    series[k].sort()
xs = [p[0] for s in series.values() for p in s]; ys = [p[1] for s in series.values() for p in s]
W, H, L, R, T, B = 720, 420, 70, 230, 40, 50
x0, x1 = min(xs), max(xs)
if x0 == x1: x1 = x0 + 1
fy = (lambda v: math.log10(v)) if a.logy else (lambda v: v)
y0, y1 = (fy(min(ys)), fy(max(ys))) if a.logy else (0, max(ys) * 1.08)
if y1 == y0: y1 = y0 + 1
px = lambda v: L + (v - x0) / (x1 - x0) * (W - L - R)
py = lambda v: H - B - (fy(v) - y0) / (y1 - y0) * (H - T - B)
cols = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#17becf', '#bcbd22']
o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
     '<rect width="100%" height="100%" fill="white"/>',
     '<text x="%d" y="20" font-size="14">%s</text>' % (L, html.escape(a.title))]
o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - R, H - B))
o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - B))
for i in range(6):
    xv = x0 + (x1 - x0) * i / 5
    o.append('<text x="%.1f" y="%d" text-anchor="middle">%.3g</text>' % (px(xv), H - B + 16, xv))
    yv = y0 + (y1 - y0) * i / 5
    lab = 10 ** yv if a.logy else yv
    yy = H - B - (yv - y0) / (y1 - y0) * (H - T - B)
    o.append('<text x="%d" y="%.1f" text-anchor="end">%.3g</text>' % (L - 6, yy + 4, lab))
    o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>' % (L, yy, W - R, yy))
o.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((L + W - R) / 2, H - 12, html.escape(a.xlabel or a.x)))
o.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">%s</text>' % ((T + H - B) / 2, (T + H - B) / 2, html.escape(a.ylabel or a.y)))
for i, (k, pts) in enumerate(sorted(series.items())):
    c = cols[i % len(cols)]
    dash = ' stroke-dasharray="5,3"' if 'mesh' in k else ''
    o.append('<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (c, dash, ' '.join('%.1f,%.1f' % (px(x), py(y)) for x, y in pts)))
    for x, y in pts:
        o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(x), py(y), c))
    o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' % (W - R + 12, T + 10 + 18 * i, W - R + 36, T + 10 + 18 * i, c, dash))
    o.append('<text x="%d" y="%d">%s</text>' % (W - R + 42, T + 14 + 18 * i, html.escape(k)))
o.append('</svg>')
open(a.out, 'w').write('\n'.join(o) + '\n')
