/* elk-noc-sim-topology.c: the noc-sim network: links, routes between
 * cores (mesh, torus, ring, all-to-all, over chips), HBM controller
 * placement, and building and freeing the simulator.  The model is
 * described in elk-noc-sim-private.h. */
#include "config.h"

#include "elk-noc-sim-private.h"

/* ---------------------------------------------------------------------- */
/* Topology. */

/* Whether a torus hop from @at toward @to, on a ring of @n routers, goes
 * the increasing way (east or south): the shorter way round, a tie going
 * that way. */
static inline gboolean
torus_up (guint at, guint to, guint n)
{
  guint fwd = (to + n - at) % n;

  return fwd <= n - fwd;
}

/* The router after @at on a ring of @n, the increasing way if @up. */
static inline guint
torus_next (guint at, gboolean up, guint n)
{
  return up ? (at + 1) % n : (at + n - 1) % n;
}

/* Appends the links from router (global core id) @src to core @dst, both
 * on the same chip, to s->path; returns the new length. */
guint
elk__noc_route_local (NocSim *s, guint src, guint dst, guint n)
{
  const NocConfig *c = &s->cfg;
  guint chip = src / s->per_chip, base = chip * s->per_chip;
  guint ls = src - base, ld = dst - base;

  switch (c->topology)
    {
    case ELK_TOPOLOGY_MESH:
    case ELK_TOPOLOGY_TORUS:
      {
        guint r = ls / c->cols, col = ls % c->cols;
        guint rd = ld / c->cols, cd = ld % c->cols;
        gboolean torus = c->topology == ELK_TOPOLOGY_TORUS;
        /* Dimension order: columns (X) first, then rows (Y); on a torus
         * each dimension takes its shorter direction, ties going east or
         * south. */
        if (!torus)
          {
            /* Mesh: straight runs, no wrap-around arithmetic per hop. */
            guint32 rowb = base + r * c->cols;
            for (; col < cd; col++)
              s->path[n++] = elk__noc_mesh_link (rowb + col, DIR_E);
            for (; col > cd; col--)
              s->path[n++] = elk__noc_mesh_link (rowb + col, DIR_W);
            for (; r < rd; r++)
              s->path[n++]
                  = elk__noc_mesh_link (base + r * c->cols + col, DIR_S);
            for (; r > rd; r--)
              s->path[n++]
                  = elk__noc_mesh_link (base + r * c->cols + col, DIR_N);
            return n;
          }
        /* Torus. */
        while (col != cd)
          {
            gboolean east = torus_up (col, cd, c->cols);
            s->path[n++] = elk__noc_mesh_link (base + r * c->cols + col,
                                               east ? DIR_E : DIR_W);
            col = torus_next (col, east, c->cols);
          }
        while (r != rd)
          {
            gboolean south = torus_up (r, rd, c->rows);
            s->path[n++] = elk__noc_mesh_link (base + r * c->cols + col,
                                               south ? DIR_S : DIR_N);
            r = torus_next (r, south, c->rows);
          }
        return n;
      }
    case ELK_TOPOLOGY_RING:
      {
        guint m = s->per_chip, fwd = (ld + m - ls) % m;
        gboolean cw = fwd <= m - fwd;
        guint p = ls;
        while (p != ld)
          {
            s->path[n++] = (base + p) * 2 + (cw ? 0 : 1);
            p = cw ? (p + 1) % m : (p + m - 1) % m;
          }
        return n;
      }
    case ELK_TOPOLOGY_ALL_TO_ALL:
    default:
      if (src != dst)
        {
          s->path[n++] = src;
          s->path[n++] = c->cores + dst;
        }
      return n;
    }
}

/* The router through which traffic from router @from (a global id) leaves
 * its chip (@out) or enters chip @chip.  Single gateway: the middle of the
 * east edge (out) or the west edge (in).  Edge gateways: the east-edge
 * router of @from's row (out), the west-edge router of the same row on
 * the other chip (in), so that cross-chip traffic is spread over the
 * rows.  Ring: the first core; unused for all-to-all. */
guint
elk__noc_gateway (NocSim *s, guint chip, gboolean out, guint from)
{
  const NocConfig *c = &s->cfg;
  guint base = chip * s->per_chip;

  if (c->topology == ELK_TOPOLOGY_MESH || c->topology == ELK_TOPOLOGY_TORUS)
    {
      guint row = c->gateway == NOC_GATEWAY_EDGE
                      ? (from % s->per_chip) / c->cols
                      : c->rows / 2;
      return base + row * c->cols + (out ? c->cols - 1 : 0);
    }
  return base;
}

/* Route between cores, over the inter-chip link when the chips differ. */
guint
elk__noc_route (NocSim *s, guint src, guint dst)
{
  guint cs = src / s->per_chip, cd = dst / s->per_chip, n = 0;

  if (cs == cd)
    return elk__noc_route_local (s, src, dst, 0);
  if (s->cfg.topology == ELK_TOPOLOGY_ALL_TO_ALL)
    {
      s->path[n++] = src;
      s->path[n++] = s->interchip;
      s->path[n++] = s->cfg.cores + dst;
      return n;
    }
  n = elk__noc_route_local (s, src, elk__noc_gateway (s, cs, TRUE, src), n);
  s->path[n++] = s->interchip;
  return elk__noc_route_local (s, elk__noc_gateway (s, cd, FALSE, src), dst, n);
}

guint
elk__noc_sim_route (
    NocSim *s, guint src, guint dst, guint32 *links, guint max_links)
{
  guint n = elk__noc_route (s, src, dst);
  memcpy (links, s->path, MIN (n, max_links) * sizeof (guint32));
  return n;
}

static inline guint manhattan (const NocSim *s, guint a, guint b);

/* The number of links elk__noc_route() takes from @src to @dst, in O(1): the
 * distance on the chip's grid or ring, or to the sender's gateway, the
 * inter-chip link, and on from the other chip's gateway. */
guint
elk__noc_sim_route_length (NocSim *s, guint src, guint dst)
{
  guint cs = src / s->per_chip, cd = dst / s->per_chip, pc = s->per_chip;

  if (src == dst)
    return 0;
  if (s->cfg.topology == ELK_TOPOLOGY_ALL_TO_ALL)
    return cs == cd ? 2 : 3;
  if (cs == cd)
    return manhattan (s, src % pc, dst % pc);
  return manhattan (s, src % pc, elk__noc_gateway (s, cs, TRUE, src) % pc) + 1
         + manhattan (s, elk__noc_gateway (s, cd, FALSE, src) % pc, dst % pc);
}

/* Sums of distances from a position x to a multiset of positions on one
 * axis of m positions (a mesh row or column, a torus dimension, a ring),
 * from prefix sums of the counts and of the count-weighted positions.  A
 * wrapping axis is laid out three times, so that the m images nearest x
 * (x - (m - 1) / 2 .. x + m / 2 on the middle copy) are one window. */
static void
axis_build (NocAxis *ax, const double *cnt)
{
  guint len = ax->wrap ? 3 * ax->m : ax->m;

  ax->n[0] = ax->w[0] = 0;
  for (guint i = 0; i < len; i++)
    {
      double c = cnt[i % ax->m];
      ax->n[i + 1] = ax->n[i] + c;
      ax->w[i + 1] = ax->w[i] + c * i;
    }
}

static inline double
axis_sum (const NocAxis *ax, guint x)
{
  guint lo = 0, hi = ax->m - 1;

  if (ax->wrap)
    {
      x += ax->m;
      lo = x - (ax->m - 1) / 2;
      hi = x + ax->m / 2;
    }
  return x * (ax->n[x] - ax->n[lo]) - (ax->w[x] - ax->w[lo])
         + (ax->w[hi + 1] - ax->w[x + 1]) - x * (ax->n[hi + 1] - ax->n[x + 1]);
}

/* The sum of the route lengths from each of the @n cores @h to each of
 * them, as elk__noc_sim_route_length() gives them, which is the bytes x links
 * of an exchange among them in units of its chunk.  Small sets pair by
 * pair; larger ones in O(n x chips + chips x (rows + cols)): on a mesh,
 * torus or ring a route's length is a row distance plus a column distance
 * (a ring is one row that wraps), on the chip or to the sender's gateway
 * and from the other chip's, so it sums over per-chip histograms of the
 * cores' rows and columns. */
double
elk__noc_sim_exchange_length (NocSim *s, const guint32 *h, guint n)
{
  const NocConfig *c = &s->cfg;
  guint K = c->chips, pc = s->per_chip, nr, nc;
  gboolean wrap = c->topology != ELK_TOPOLOGY_MESH;
  double sum = 0, *cnt = s->xl_cnt, *rows = s->xl_rows, *cols = s->xl_cols;

  if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
    {
      /* Two links on a chip, three across (the inter-chip link). */
      memset (cnt, 0, K * sizeof (double));
      for (guint p = 0; p < n; p++)
        cnt[h[p] / pc]++;
      for (guint p = 0; p < n; p++)
        {
          double same = cnt[h[p] / pc];
          sum += 2 * (same - 1) + 3 * (n - same);
        }
      return sum;
    }
  nr = c->topology == ELK_TOPOLOGY_RING ? 1 : c->rows;
  nc = c->topology == ELK_TOPOLOGY_RING ? pc : c->cols;
  if ((double) n * n <= 8.0 * K * (nr + nc))
    {
      for (guint p = 0; p < n; p++)
        for (guint q = 0; q < n; q++)
          sum += elk__noc_sim_route_length (s, h[p], h[q]);
      return sum;
    }
  memset (cnt, 0, K * sizeof (double));
  memset (rows, 0, (gsize) K * nr * sizeof (double));
  memset (cols, 0, (gsize) K * nc * sizeof (double));
  for (guint p = 0; p < n; p++)
    {
      guint k = h[p] / pc, l = h[p] % pc;
      cnt[k]++;
      rows[k * nr + l / nc]++;
      cols[k * nc + l % nc]++;
    }
  for (guint k = 0; k < K; k++)
    {
      s->xl_ra[k].m = nr;
      s->xl_ca[k].m = nc;
      s->xl_ra[k].wrap = s->xl_ca[k].wrap = wrap;
      if (cnt[k] > 0)
        {
          axis_build (&s->xl_ra[k], rows + (gsize) k * nr);
          axis_build (&s->xl_ca[k], cols + (gsize) k * nc);
        }
    }
  for (guint p = 0; p < n; p++)
    {
      guint cs = h[p] / pc, l = h[p] % pc;
      for (guint k = 0; k < K; k++)
        {
          guint lo, li;
          if (cnt[k] == 0)
            continue;
          if (k == cs)
            {
              sum += axis_sum (&s->xl_ra[k], l / nc)
                     + axis_sum (&s->xl_ca[k], l % nc);
              continue;
            }
          lo = elk__noc_gateway (s, cs, TRUE, h[p]) % pc;
          li = elk__noc_gateway (s, k, FALSE, h[p]) % pc;
          sum += cnt[k] * (manhattan (s, l, lo) + 1)
                 + axis_sum (&s->xl_ra[k], li / nc)
                 + axis_sum (&s->xl_ca[k], li % nc);
        }
    }
  return sum;
}

/* reduce=2d: how a code generator for a mesh would cut the reduce-scatter
 * of one output among its @n holders (in ring order, which is core order:
 * the layout puts the reduction dimensions right after the rotating ones,
 * so consecutive holders are nearby cores).  A two-level reduce-scatter
 * with n = A x B first exchanges among each block of A consecutive holders
 * (each sends the A - 1 others the 1/A of the output they reduce), then
 * among the B holders of the same 1/A in different blocks (each sends the
 * B - 1 others 1/n).  Every holder sends (1 - 1/n) of the output, as in
 * the one-round exchange, but the large chunks go to nearby holders and
 * only the small ones far.  A is chosen to minimise the bytes x links the
 * reduction puts on the network (summed over the holders, exact route
 * lengths): when every group reduces at once, that is the load the links
 * must carry, and what makes the exchange slow on a mesh.  Returns A; 1
 * when no factorisation beats the one-round exchange (n prime, or
 * all-to-all, where every route has the same length). */
guint
elk__noc_sim_reduce_split (NocSim *s, const guint32 *h, guint n)
{
  double best;
  guint best_a = 1;
  guint32 *g = s->xl_group;

  if (n < 4)
    return 1;
  /* The one-round exchange: every holder sends 1/n to every other one. */
  best = elk__noc_sim_exchange_length (s, h, n) / n;
  for (guint a = 2; a < n; a++)
    {
      guint b = n / a;
      double near = 0, far = 0, score;
      if (n % a != 0)
        continue;
      for (guint pb = 0; pb < b; pb++)
        near += elk__noc_sim_exchange_length (s, h + (gsize) pb * a, a);
      for (guint pa = 0; pa < a; pa++)
        {
          for (guint y = 0; y < b; y++)
            g[y] = h[(gsize) y * a + pa];
          far += elk__noc_sim_exchange_length (s, g, b);
        }
      score = near / a + far / n;
      /* Ties keep the fewer rounds (and barriers). */
      if (score < best * (1 - 1e-9))
        {
          best = score;
          best_a = a;
        }
    }
  return best_a;
}

const char *
elk__noc_sim_link_name (NocSim *s, guint li, char *buf, gsize len)
{
  const NocConfig *c = &s->cfg;
  static const char *dirs[] = { "E", "W", "S", "N" };

  if (li == s->interchip)
    g_snprintf (buf, len, "inter-chip");
  else if (s->priv_base != 0 && li >= s->priv_base)
    g_snprintf (buf, len, "core%u-preload-in", li - s->priv_base);
  else if (li >= s->attach_base)
    g_snprintf (buf, len, "hbm%u-attach%u", (li - s->attach_base) / s->attach,
                (li - s->attach_base) % s->attach);
  else if (li >= s->read_base)
    g_snprintf (buf, len, "hbm%u-read", li - s->read_base);
  else if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
    g_snprintf (buf, len, "core%u-%s", li % c->cores,
                li < c->cores ? "out" : "in");
  else if (c->topology == ELK_TOPOLOGY_RING)
    g_snprintf (buf, len, "core%u-%s", li / 2, li % 2 ? "ccw" : "cw");
  else
    {
      guint g = li / 4, l = g % s->per_chip;
      g_snprintf (buf, len, "chip%u-r%u-c%u-%s", g / s->per_chip, l / c->cols,
                  l % c->cols, dirs[li % 4]);
    }
  return buf;
}

static inline guint
manhattan (const NocSim *s, guint a, guint b)
{
  const NocConfig *c = &s->cfg;

  if (c->topology == ELK_TOPOLOGY_RING)
    {
      guint m = s->per_chip, d = (b + m - a) % m;
      return MIN (d, m - d);
    }
  {
    guint ra = a / c->cols, ca = a % c->cols, rb = b / c->cols,
          cb = b % c->cols;
    guint dr = ra > rb ? ra - rb : rb - ra, dc = ca > cb ? ca - cb : cb - ca;
    if (c->topology == ELK_TOPOLOGY_TORUS)
      {
        dr = MIN (dr, c->rows - dr);
        dc = MIN (dc, c->cols - dc);
      }
    return dr + dc;
  }
}

/* Places the controllers of one chip (local router ids) and fills the
 * attachment tables.  Same placement on every chip. */
static gboolean
place_controllers (NocSim *s, GError **error)
{
  const NocConfig *c = &s->cfg;
  guint m = s->per_chip, hc = s->hc;
  g_autofree guint32 *allowed = g_new (guint32, m);
  g_autofree guint8 *taken = g_new0 (guint8, m);
  g_autofree guint32 *center = g_new (guint32, hc);
  g_autofree guint32 *local_attach = NULL;
  guint n_allowed = 0;

  if (c->topology == ELK_TOPOLOGY_RING)
    {
      for (guint i = 0; i < m; i++)
        allowed[n_allowed++] = i;
      for (guint h = 0; h < hc; h++)
        center[h] = (guint32) (((guint64) h * m + m / (2 * hc)) / hc) % m;
    }
  else
    {
      guint R = c->rows, C = c->cols;
      g_autofree guint8 *seen = g_new0 (guint8, m);
#define ADD(r_, c_)                                                            \
  G_STMT_START                                                                 \
  {                                                                            \
    guint id_ = (r_) *C + (c_);                                                \
    if (!seen[id_])                                                            \
      {                                                                        \
        seen[id_] = 1;                                                         \
        allowed[n_allowed++] = id_;                                            \
      }                                                                        \
  }                                                                            \
  G_STMT_END
      if (c->placement == NOC_PLACE_COORDS)
        {
          for (guint i = 0; i < m; i++)
            allowed[n_allowed++] = i;
        }
      else if (c->placement == NOC_PLACE_ONE_EDGE)
        {
          for (guint j = 0; j < C; j++)
            ADD (0, j);
        }
      else
        {
          /* The perimeter, clockwise from the top-left corner. */
          for (guint j = 0; j < C; j++)
            ADD (0, j);
          for (guint i = 1; i < R; i++)
            ADD (i, C - 1);
          for (guint j = C; j-- > 0;)
            ADD (R - 1, j);
          for (guint i = R; i-- > 1;)
            ADD (i, 0);
        }
#undef ADD
      for (guint h = 0; h < hc; h++)
        {
          switch (c->placement)
            {
            case NOC_PLACE_EDGES:
            case NOC_PLACE_ONE_EDGE:
              center[h] = allowed[(guint) (((guint64) h * n_allowed
                                            + n_allowed / (2 * hc))
                                           / hc)
                                  % n_allowed];
              break;
            case NOC_PLACE_CORNERS:
              {
                static const guint corner[4][2]
                    = { { 0, 0 }, { 0, 1 }, { 1, 1 }, { 1, 0 } };
                center[h] = corner[h % 4][0] * (R - 1) * C
                            + corner[h % 4][1] * (C - 1);
                break;
              }
            case NOC_PLACE_COORDS:
              {
                guint r = c->coords[2 * h], col = c->coords[2 * h + 1];
                if (r >= R || col >= C)
                  {
                    g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,
                                 "chip 'noc-sim': hbm-coords: controller %u "
                                 "at row %u, column %u is off the %ux%u grid "
                                 "(rows 0-%u, columns 0-%u)",
                                 h, r, col, R, C, R - 1, C - 1);
                    return FALSE;
                  }
                center[h] = r * C + col;
                break;
              }
            default:
              g_assert_not_reached ();
            }
        }
    }

  s->attach = c->hbm_attach > 0 ? c->hbm_attach : MAX (1u, n_allowed / hc);
  if (s->attach > n_allowed)
    {
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,
                   "chip 'noc-sim': hbm-attach = %u, but the placement offers "
                   "only %u routers per chip",
                   s->attach, n_allowed);
      return FALSE;
    }
  /* Each controller takes the routers nearest its centre that no earlier
   * controller took, so that controllers do not share attachment links
   * unless the placement forces it (corners with many controllers). */
  local_attach = g_new (guint32, (gsize) hc * s->attach);
  for (guint h = 0; h < hc; h++)
    {
      guint got = 0;
      for (guint pass = 0; pass < 2 && got < s->attach; pass++)
        while (got < s->attach)
          {
            guint best = G_MAXUINT, bd = G_MAXUINT;
            for (guint i = 0; i < n_allowed; i++)
              {
                guint d;
                if (taken[allowed[i]] > pass)
                  continue;
                d = manhattan (s, center[h], allowed[i]);
                if (d < bd)
                  {
                    bd = d;
                    best = allowed[i];
                  }
              }
            if (best == G_MAXUINT)
              break;
            taken[best]++;
            local_attach[h * s->attach + got++] = best;
          }
    }

  s->attach_router = g_new (guint32, (gsize) c->hbm_channels * s->attach);
  s->attach_for = g_new (guint16, (gsize) c->hbm_channels * m);
  s->near_ctrl = g_new (guint16, m);
  for (guint h = 0; h < c->hbm_channels; h++)
    {
      guint chip = h / hc, hl = h % hc;
      for (guint a = 0; a < s->attach; a++)
        s->attach_router[h * s->attach + a]
            = chip * m + local_attach[hl * s->attach + a];
    }
  for (guint l = 0; l < m; l++)
    {
      guint best_h = 0, best_d = G_MAXUINT;
      for (guint hl = 0; hl < hc; hl++)
        {
          guint ba = 0, bd = G_MAXUINT;
          for (guint a = 0; a < s->attach; a++)
            {
              guint d = manhattan (s, local_attach[hl * s->attach + a], l);
              if (d < bd)
                {
                  bd = d;
                  ba = a;
                }
            }
          for (guint chip = 0; chip < c->chips; chip++)
            s->attach_for[(chip * hc + hl) * (gsize) m + l] = (guint16) ba;
          if (bd < best_d)
            {
              best_d = bd;
              best_h = hl;
            }
        }
      s->near_ctrl[l] = (guint16) best_h;
    }
  return TRUE;
}

NocSim *
elk__noc_sim_new (const NocConfig *config, GError **error)
{
  g_autoptr (NocSim) s = g_new0 (NocSim, 1);
  const NocConfig *c = &s->cfg;
  guint n;

  s->cfg = *config;
  s->cfg.coords
      = g_memdup2 (config->coords, sizeof (guint) * 2 * config->n_coords);
  s->per_chip = c->cores / c->chips;
  s->hc = c->hbm_channels / c->chips;
  /* The ladder's latency switches act on the configuration itself. */
  if (!FX (s, NOC_FX_HOP_LATENCY))
    s->cfg.hop_latency = 0;
  if (!FX (s, NOC_FX_HBM_LATENCY))
    s->cfg.hbm_latency = 0;
  if (!FX (s, NOC_FX_PACKETS))
    s->cfg.packet_bytes = 1e30; /* every piece in one read */
  if (c->topology != ELK_TOPOLOGY_ALL_TO_ALL
      && (!FX (s, NOC_FX_HBM_CONTROLLERS) || !FX (s, NOC_FX_CONTENTION)))
    {
      /* One pool of controllers and the preloads' own ports exist on
       * all-to-all only, the topology the analytic chip models. */
      g_set_error (error, ELK_CHIP_ERROR, ELK_CHIP_ERROR_CONFIG,
                   "chip 'noc-sim': effect-%s = off needs topology "
                   "all-to-all (the analytic chip's), not %s",
                   !FX (s, NOC_FX_HBM_CONTROLLERS) ? "hbm-controllers"
                                                   : "contention",
                   elk_topology_to_string (c->topology));
      return NULL;
    }
  /* reduce=auto: on all-to-all every pair of cores is two hops apart, so
   * a 2-D reduce-scatter would save no link traffic and cost a second
   * barrier; keep the one-round exchange there (and so the results
   * checked against the analytic chip).  Everywhere else distance
   * matters. */
  if (s->cfg.reduce == NOC_REDUCE_AUTO)
    s->cfg.reduce = c->topology == ELK_TOPOLOGY_ALL_TO_ALL ? NOC_REDUCE_EXCHANGE
                                                           : NOC_REDUCE_2D;
  switch (c->topology)
    {
    case ELK_TOPOLOGY_MESH:
    case ELK_TOPOLOGY_TORUS:
      s->n_core_links = 4 * c->cores;
      break;
    case ELK_TOPOLOGY_RING:
      s->n_core_links = 2 * c->cores;
      break;
    default:
      s->n_core_links = 2 * c->cores;
    }
  s->read_base = s->n_core_links;
  s->attach_base = s->read_base + c->hbm_channels;
  if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL)
    s->attach = 0;
  else if (!place_controllers (s, error))
    return NULL;
  n = s->attach_base + c->hbm_channels * s->attach;
  s->interchip = c->chips > 1 ? n++ : G_MAXUINT;
  if (c->topology == ELK_TOPOLOGY_ALL_TO_ALL
      && (!FX (s, NOC_FX_CONTENTION) || !FX (s, NOC_FX_ALL_TRANSFERS)))
    {
      /* Contention off, or a bound's private preload network applied:
       * preload copies land on ports of their own, so that execution
       * traffic never queues behind them. */
      s->priv_base = n;
      n += c->cores;
    }
  s->n_links = n;
  s->links = g_new0 (NocLink, n);
  s->ls = g_new0 (NocLinkState, n);
  for (guint i = 0; i < n; i++)
    {
      NocLink *l = &s->links[i];
      l->track = -1;
      l->present = 1;
      s->ls[i].queue = NONE;
      l->bw = c->link_bw;
      l->lat = c->hop_latency;
      if (i >= s->read_base && i < s->attach_base)
        {
          /* Without per-chip controllers, controller 0 is one pool of
           * the whole bandwidth and reads everything. */
          l->bw = FX (s, NOC_FX_HBM_CONTROLLERS) ? c->hbm_bw / c->hbm_channels
                                                 : c->hbm_bw;
          l->lat = c->hbm_latency;
        }
      else if (s->priv_base != 0 && i >= s->priv_base)
        l->bw = c->link_bw;
      else if (i >= s->attach_base && i != s->interchip)
        l->bw = c->hbm_port_bw;
      else if (i == s->interchip)
        l->bw = FX (s, NOC_FX_INTER_CHIP) ? c->inter_chip_bw : INFINITY;
    }
  if (c->topology == ELK_TOPOLOGY_MESH)
    for (guint g = 0; g < c->cores; g++)
      {
        guint l = g % s->per_chip, r = l / c->cols, col = l % c->cols;
        s->links[elk__noc_mesh_link (g, DIR_E)].present = col + 1 < c->cols;
        s->links[elk__noc_mesh_link (g, DIR_W)].present = col > 0;
        s->links[elk__noc_mesh_link (g, DIR_S)].present = r + 1 < c->rows;
        s->links[elk__noc_mesh_link (g, DIR_N)].present = r > 0;
      }
  if (c->topology == ELK_TOPOLOGY_TORUS)
    for (guint g = 0; g < c->cores; g++)
      {
        /* A torus dimension of one has no links; of two, one pair. */
        s->links[elk__noc_mesh_link (g, DIR_E)].present = c->cols > 1;
        s->links[elk__noc_mesh_link (g, DIR_W)].present = c->cols > 2;
        s->links[elk__noc_mesh_link (g, DIR_S)].present = c->rows > 1;
        s->links[elk__noc_mesh_link (g, DIR_N)].present = c->rows > 2;
      }
  s->max_path = 8 + 2 * (c->rows + c->cols) + 2 * s->per_chip;
  s->path = g_new (guint32, s->max_path);
  s->heap_cap = 64 + c->hbm_channels;
  s->heap = g_new (NocEvent, s->heap_cap);
  s->bucket = g_new (NocBucket, RING_N);
  for (guint i = 0; i < RING_N; i++)
    s->bucket[i].first = s->bucket[i].last = NONE;
  s->bmap = g_new0 (guint64, RING_N / 64);
  /* The window is one hop latency, the shortest time from an arrival to
   * the next one it causes.  With no latency at all, windows of 1 ps keep
   * the arrivals of one window nearly simultaneous; arrivals caused inside
   * a window are then served in that window in the order they come. */
  s->inv_w = 1.0 / (c->hop_latency > 1e-12 ? c->hop_latency : 1e-12);
  s->core_rate = c->core_gap > 0 ? 1.0 / c->core_gap : INFINITY;
  s->chunk_free = NONE;
  s->serve_ch = NONE;
  {
    /* A ring is one wrapping row of per_chip positions. */
    guint nr = c->topology == ELK_TOPOLOGY_RING ? 1 : MAX (1u, c->rows);
    guint nc
        = c->topology == ELK_TOPOLOGY_RING ? s->per_chip : MAX (1u, c->cols);
    double *pre;
    s->xl_cnt = g_new (double, c->chips);
    s->xl_rows = g_new (double, (gsize) c->chips *nr);
    s->xl_cols = g_new (double, (gsize) c->chips *nc);
    s->xl_prefix = pre
        = g_new (double, (gsize) c->chips * 2 * ((3 * nr + 1) + (3 * nc + 1)));
    s->xl_ra = g_new (NocAxis, c->chips);
    s->xl_ca = g_new (NocAxis, c->chips);
    for (guint k = 0; k < c->chips; k++)
      {
        s->xl_ra[k].n = pre;
        s->xl_ra[k].w = pre + 3 * nr + 1;
        pre += 2 * (3 * nr + 1);
        s->xl_ca[k].n = pre;
        s->xl_ca[k].w = pre + 3 * nc + 1;
        pre += 2 * (3 * nc + 1);
      }
    s->xl_group = g_new (guint32, c->cores);
  }
  return g_steal_pointer (&s);
}

/* The analytic quantities the ladder's off positions use, one per
 * operator of the programs to come (copied). */
void
elk__noc_sim_set_costs (NocSim *s, const NocOpCost *costs, guint n_ops)
{
  g_free (s->costs);
  s->costs = g_memdup2 (costs, sizeof (NocOpCost) * n_ops);
  s->n_costs = n_ops;
}

void
elk__noc_sim_free (NocSim *s)
{
  if (s == NULL)
    return;
  g_free (s->cfg.coords);
  g_free (s->links);
  g_free (s->ls);
  g_free (s->attach_router);
  g_free (s->attach_for);
  g_free (s->near_ctrl);
  g_free (s->path);
  g_free (s->heap);
  g_aligned_free (s->pool);
  g_free (s->pool_fmap);
  g_aligned_free (s->arr); /* both from big_alloc(), calendar.c */
  g_free (s->chunk_next);
  g_free (s->bucket);
  g_free (s->bmap);
  g_free (s->sortbuf);
  g_free (s->has_preload);
  g_free (s->preload_done);
  g_free (s->pq);
  g_free (s->piece_bytes);
  g_free (s->piece_dest_off);
  g_free (s->piece_ndest);
  g_free (s->dests);
  g_free (s->ctrl_off);
  g_free (s->ctrl_list);
  g_free (s->ctrl_pos);
  g_free (s->ctrl_k);
  g_free (s->ctrl_maxk);
  g_free (s->ctrl_first);
  g_free (s->ctrl_last);
  g_free (s->rounds);
  g_free (s->nbr);
  g_free (s->holders);
  g_free (s->xl_cnt);
  g_free (s->xl_rows);
  g_free (s->xl_cols);
  g_free (s->xl_prefix);
  g_free (s->xl_ra);
  g_free (s->xl_ca);
  g_free (s->xl_group);
  g_free (s->costs);
  g_free (s->pl_start);
  g_free (s->pl_end);
  g_free (s->issued);
  if (s->intervals != NULL)
    g_array_unref (s->intervals);
  g_free (s);
}
