/* elk-noc-sim-calendar.c: transfers and the event queue of the noc-sim
 * engine: the event heap, routing of transfers hop by hop, the pool of
 * transfers, the calendar ring of windows, the FIFO service of links
 * and route booking.
 *
 * Event queue.  No arrival can cause another arrival less than one hop
 * latency L later, so time is cut into windows of width L: all arrivals
 * of one window are known once the earlier windows are done, and links
 * are independent inside a window.  A window's arrivals are therefore
 * gathered per link and each link serves its own in arrival order; this
 * is exactly the order a time-ordered event loop would use, without a
 * heap operation per hop.  The windows ahead are a calendar ring of
 * buckets (one per window, a bitmap to find the next one) of 16-byte
 * arrivals that name a transfer in the pool, where it stays from
 * injection to arrival; arrivals beyond the ring and all other events
 * (controller reads, rounds, ends of preloads and executes) go through a
 * binary heap.
 *
 * Everything is preallocated when the simulator is built or when a run
 * starts (the transfer and arrival pools double when they run out, which
 * happens a few times per simulator, not per event); the event loop calls
 * no GObject code.
 */
#include "config.h"

#include <sys/mman.h>

#include "elk-noc-sim-private.h"

#define HUGE_PAGE ((gsize) 2 << 20)

/* ---------------------------------------------------------------------- */
/* Event heap. */

static inline gboolean
ev_before (const NocEvent *a, const NocEvent *b)
{
  return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

void
elk__noc_heap_push (NocSim *s, double t, guint32 kind, guint32 arg)
{
  guint i;

  if (G_UNLIKELY (s->heap_n == s->heap_cap))
    {
      /* Only reached if the bound computed at setup was too small. */
      s->heap_cap *= 2;
      s->heap = g_renew (NocEvent, s->heap, s->heap_cap);
    }
  i = s->heap_n++;
  NocEvent e = { t, s->seq++, kind, arg };
  while (i > 0)
    {
      guint p = (i - 1) / 2;
      if (!ev_before (&e, &s->heap[p]))
        break;
      s->heap[i] = s->heap[p];
      i = p;
    }
  s->heap[i] = e;
}

NocEvent
elk__noc_heap_pop (NocSim *s)
{
  NocEvent top = s->heap[0], last = s->heap[--s->heap_n];
  guint i = 0, n = s->heap_n;

  for (;;)
    {
      guint l = 2 * i + 1, r = l + 1, m = i;
      const NocEvent *cur = &last;
      if (l < n && ev_before (&s->heap[l], cur))
        {
          m = l;
          cur = &s->heap[l];
        }
      if (r < n && ev_before (&s->heap[r], cur))
        m = r;
      if (m == i)
        break;
      s->heap[i] = s->heap[m];
      i = m;
    }
  if (n > 0)
    s->heap[i] = last;
  return top;
}

/* ---------------------------------------------------------------------- */
/* Transfers: routing on the fly. */

/* The hop code below takes the topology as an argument: the serve loop
 * has a copy of it for the mesh (topology ELK_TOPOLOGY_MESH, a constant
 * there), in which the switches on the topology fold away, and one for
 * the others that reads the configuration (TOPO_ANY). */
#define TOPO_ANY G_MAXUINT

G_ALWAYS_INLINE static inline guint
topo_of (const NocSim *s, guint topo)
{
  return topo != TOPO_ANY ? topo : (guint) s->cfg.topology;
}

/* The link a transfer takes from the router (or port) its head is at, or
 * NONE when it has arrived.  Same routes as elk__noc_route(): dimension order,
 * columns first, and over the chip's gateway to another chip. */
G_ALWAYS_INLINE static inline guint32
train_route_in (NocSim *s, NocTrain *t, guint topo)
{
  const NocConfig *c = &s->cfg;
  guint32 g = t->chip * s->per_chip;

  switch (topo_of (s, topo))
    {
    case ELK_TOPOLOGY_MESH:
      g += (guint32) t->r * c->cols + t->c;
      if (t->c != t->tc)
        return elk__noc_mesh_link (g, t->c < t->tc ? DIR_E : DIR_W);
      if (t->r != t->tr)
        return elk__noc_mesh_link (g, t->r < t->tr ? DIR_S : DIR_N);
      break;
    case ELK_TOPOLOGY_TORUS:
      g += (guint32) t->r * c->cols + t->c;
      if (t->c != t->tc)
        {
          guint fwd = (t->tc + c->cols - t->c) % c->cols;
          return elk__noc_mesh_link (g, fwd <= c->cols - fwd ? DIR_E : DIR_W);
        }
      if (t->r != t->tr)
        {
          guint fwd = (t->tr + c->rows - t->r) % c->rows;
          return elk__noc_mesh_link (g, fwd <= c->rows - fwd ? DIR_S : DIR_N);
        }
      break;
    case ELK_TOPOLOGY_RING:
      if (t->c != t->tc)
        {
          guint m = s->per_chip, fwd = (t->tc + m - t->c) % m;
          return (g + t->c) * 2 + (fwd <= m - fwd ? 0 : 1);
        }
      break;
    case ELK_TOPOLOGY_ALL_TO_ALL:
    default:
      /* Egress port, maybe the inter-chip link, ingress port (without
       * the inter-chip effect, the chips are one: no inter-chip link).
       * A preload copy on its own ports (contention off) lands on the
       * holder's preload port. */
      if (t->link < c->cores)
        return t->dst / s->per_chip != t->link / s->per_chip
                       && FX (s, NOC_FX_INTER_CHIP)
                   ? s->interchip
                   : c->cores + t->dst;
      if (t->link == s->interchip)
        return t->kind == 5 && s->priv_base != 0 ? s->priv_base + t->dst
                                                 : c->cores + t->dst;
      return NONE;
    }
  /* At the router it headed for: the destination, or the gateway. */
  return t->stage == 0 ? s->interchip : NONE;
}

G_ALWAYS_INLINE static inline guint32
train_route (NocSim *s, NocTrain *t)
{
  return train_route_in (s, t, TOPO_ANY);
}

/* The row and column of local router @l: a ring is one row, a mesh or a
 * torus is numbered row by row. */
static inline void
router_at (const NocConfig *c, guint l, guint16 *row, guint16 *col)
{
  if (c->topology == ELK_TOPOLOGY_RING)
    {
      *row = 0;
      *col = (guint16) l;
    }
  else
    {
      *row = (guint16) (l / c->cols);
      *col = (guint16) (l % c->cols);
    }
}

/* Puts the head at local router @l of chip @chip. */
static inline void
train_place (NocSim *s, NocTrain *t, guint chip, guint l)
{
  t->chip = (guint16) chip;
  router_at (&s->cfg, l, &t->r, &t->c);
}

/* Sets where a transfer whose head is at its first router heads for: the
 * destination on this chip, or the gateway out of it (the east-edge router
 * of the head's row, or the single gateway; the ring's first core). */
static inline void
train_aim (NocSim *s, NocTrain *t)
{
  const NocConfig *c = &s->cfg;
  guint dchip = t->dst / s->per_chip, dl = t->dst % s->per_chip;

  if (dchip == t->chip)
    {
      t->stage = 1;
      router_at (c, dl, &t->tr, &t->tc);
      return;
    }
  t->stage = 0;
  if (c->topology == ELK_TOPOLOGY_RING)
    t->tr = t->tc = 0;
  else
    {
      t->tr = c->gateway == NOC_GATEWAY_EDGE ? t->r : (guint16) (c->rows / 2);
      t->tc = (guint16) (c->cols - 1);
    }
}

/* train_cross() over a link that is not a core link: the inter-chip link
 * or an HBM controller's attachment (rare, so kept out of the hop loop). */
G_GNUC_NO_INLINE static void
train_cross_port (NocSim *s, NocTrain *t)
{
  const NocConfig *c = &s->cfg;
  guint32 li = t->link;

  if (li == s->interchip)
    {
      /* Into the destination chip at the west-edge router of the row it
       * left from (or the single gateway, or the ring's first core). */
      t->chip = (guint16) (t->dst / s->per_chip);
      t->crossed = 1;
      if (c->topology == ELK_TOPOLOGY_RING)
        t->c = 0;
      else
        {
          if (c->gateway != NOC_GATEWAY_EDGE)
            t->r = (guint16) (c->rows / 2);
          t->c = 0;
        }
      train_aim (s, t);
      return;
    }
  if (li >= s->attach_base)
    {
      guint g = s->attach_router[li - s->attach_base];
      train_place (s, t, g / s->per_chip, g % s->per_chip);
      train_aim (s, t);
    }
}

/* Moves the head of @t across its link, to the router at the far end. */
G_ALWAYS_INLINE static inline void
train_cross_in (NocSim *s, NocTrain *t, guint topo)
{
  const NocConfig *c = &s->cfg;
  guint32 li = t->link;

  topo = topo_of (s, topo);
  if (topo == ELK_TOPOLOGY_ALL_TO_ALL)
    return;
  if (li < s->n_core_links)
    {
      if (topo == ELK_TOPOLOGY_MESH)
        {
          /* Without a branch on the direction, which differs from one
           * arrival to the next: a route on the mesh never leaves its
           * chip's routers, so the torus's wrap-around is not needed. */
          static const gint8 dc[4] = { [DIR_E] = 1, [DIR_W] = -1 };
          static const gint8 dr[4] = { [DIR_S] = 1, [DIR_N] = -1 };
          t->c = (guint16) (t->c + dc[li & 3]);
          t->r = (guint16) (t->r + dr[li & 3]);
          return;
        }
      if (topo == ELK_TOPOLOGY_RING)
        {
          guint m = s->per_chip;
          t->c = (guint16) ((li & 1) ? (t->c + m - 1) % m : (t->c + 1) % m);
          return;
        }
      switch (li & 3)
        {
        case DIR_E:
          t->c = (guint16) (t->c + 1u == c->cols ? 0u : t->c + 1u);
          break;
        case DIR_W:
          t->c = (guint16) (t->c == 0 ? c->cols - 1u : t->c - 1u);
          break;
        case DIR_S:
          t->r = (guint16) (t->r + 1u == c->rows ? 0u : t->r + 1u);
          break;
        default:
          t->r = (guint16) (t->r == 0 ? c->rows - 1u : t->r - 1u);
        }
      return;
    }
  train_cross_port (s, t);
}

static inline void
train_cross (NocSim *s, NocTrain *t)
{
  train_cross_in (s, t, TOPO_ANY);
}

/* Puts a new transfer's head at core @core (mesh, torus, ring) and sets
 * its first link. */
void
elk__noc_train_start (NocSim *s, NocTrain *t, guint core)
{
  train_place (s, t, core / s->per_chip, core % s->per_chip);
  train_aim (s, t);
  t->link = train_route (s, t);
}

/* Routes as the transfers walk them, for the tests. */
guint
elk__noc_sim_walk_route (
    NocSim *s, guint src, guint dst, guint32 *links, guint max_links)
{
  NocTrain t = { 0 };
  guint n = 0;

  t.dst = dst;
  if (s->cfg.topology == ELK_TOPOLOGY_ALL_TO_ALL)
    t.link = src != dst ? src : NONE;
  else
    {
      train_place (s, &t, src / s->per_chip, src % s->per_chip);
      train_aim (s, &t);
      t.link = train_route (s, &t);
    }
  while (t.link != NONE)
    {
      if (n < max_links)
        links[n] = t.link;
      n++;
      train_cross (s, &t);
      t.link = train_route (s, &t);
    }
  return n;
}

/* ---------------------------------------------------------------------- */
/* Transfers: the pool, the calendar and the FIFO service. */

/* Transfers stay in one pool slot from injection to arrival and are
 * updated there hop by hop; the calendar's buckets hold 16-byte arrivals
 * (slot, link, chain) instead of copies of the transfers.  A hop then
 * touches its transfer's cache line once (prefetched a few arrivals
 * ahead, as the bucket says which slot comes next) and appends 16 bytes
 * to the bucket of its next window, where copying 64 bytes into a cold
 * chunk of that bucket used to cost a read for ownership per hop. */

/* How far ahead the loops over transfers prefetch: slots on the free
 * stack, and arrivals of a bucket (whose transfers are all over the pool;
 * the arrivals' own lines are fetched twice as far ahead). */
#define PREFETCH_SLOTS 8
#define PREFETCH_ARRIVALS 16
/* Chunks of the next windows' buckets prefetched (elk__noc_ring_drain()):
 * a window of a burst can have thousands of arrivals, of which the first
 * few chunks are what fits the cache beside the current window. */
#define LOOKAHEAD_CHUNKS 4

/* Allocates @n elements of @size bytes, cache-line aligned (so that a
 * transfer is one line).
 *
 * The transfer and arrival pools of a large run are tens of MiB, touched
 * at random: in 4 KiB pages that is thousands of pages, more than the TLB
 * holds, so a hop (and a prefetch meant to hide its miss) also walked the
 * page tables; huge pages took a quarter off the mesh benchmark's CPU
 * time (docs/performance.md).  An array of 2 MiB or
 * more is therefore aligned to 2 MiB and asked to be backed by huge pages
 * (the kernel's transparent huge pages are usually on "madvise"); where
 * that is refused the array works as before.  Freed with
 * g_aligned_free(). */
static gpointer
big_alloc (gsize n, gsize size)
{
  gsize bytes = n * size;
  gpointer p;

  if (bytes < HUGE_PAGE)
    return g_aligned_alloc (n, size, 64);
  p = g_aligned_alloc (n, size, HUGE_PAGE);
#ifdef MADV_HUGEPAGE
  (void) madvise (p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

/* Free slots are bits of a map (pool_fmap), and a transfer takes the
 * first free slot at or after the one the previous transfer took
 * (pool_next), wrapping around.  So the transfers an execution round
 * injects in one go take slots in ascending order, mostly consecutive,
 * and as most of them move on one window per hop in the order they were
 * filed, the windows of a round visit their slots in that order too,
 * line after line.  A stack of free slots (the engine before commit
 * ad6f58c) handed out whatever arrivals had freed last, which after
 * a few rounds is the pool in random order: a miss per hop on the
 * transfer's line, and the largest windows (thousands of arrivals, 62%
 * of the mesh benchmark's) do not fit the cache (docs/performance.md).
 * Which slot a transfer has changes nothing else. */
G_GNUC_NO_INLINE static void
train_pool_grow (NocSim *s)
{
  guint32 old = s->pool_cap, cap = MAX (4096u, 2 * old);
  NocTrain *pool = big_alloc ((gsize) cap, sizeof (NocTrain));

  if (old > 0)
    memcpy (pool, s->pool, (gsize) old * sizeof (NocTrain));
  g_aligned_free (s->pool);
  s->pool = pool;
  /* cap is a multiple of 64: whole words of the map. */
  s->pool_fmap = g_renew (guint64, s->pool_fmap, cap / 64);
  memset (s->pool_fmap + old / 64, 0xff, (cap - old) / 8);
  s->pool_n_free += cap - old;
  s->pool_next = old;
  s->pool_cap = cap;
}

static inline guint32
train_alloc (NocSim *s)
{
  guint32 wi, slot, n_words;
  guint64 m;

  if (G_UNLIKELY (s->pool_n_free == 0))
    train_pool_grow (s);
  n_words = s->pool_cap / 64;
  wi = s->pool_next / 64;
  m = s->pool_fmap[wi] & (~G_GUINT64_CONSTANT (0) << (s->pool_next & 63));
  while (m == 0)
    {
      wi = wi + 1 == n_words ? 0 : wi + 1;
      m = s->pool_fmap[wi];
    }
  slot = wi * 64 + (guint32) __builtin_ctzll (m);
  s->pool_fmap[wi] &= ~(G_GUINT64_CONSTANT (1) << (slot & 63));
  s->pool_n_free--;
  s->pool_next = slot + 1 == s->pool_cap ? 0 : slot + 1;
  /* An execution round injects its transfers in one go into slots that
   * have gone cold since their last use: ask for the lines of the slots a
   * few injections on, so that writing them does not wait. */
  if (slot + PREFETCH_SLOTS < s->pool_cap)
    __builtin_prefetch (&s->pool[slot + PREFETCH_SLOTS], 1);
  return slot;
}

static inline void
train_release (NocSim *s, guint32 slot)
{
  s->pool_fmap[slot / 64] |= G_GUINT64_CONSTANT (1) << (slot & 63);
  s->pool_n_free++;
}

/* Frees pool slot @slot (elk-noc-sim-steady.c, refiling a transfer). */
void
elk__noc_train_release (NocSim *s, guint32 slot)
{
  train_release (s, slot);
}

/* Sets @in_use[i] (pool_cap bytes) to whether pool slot i holds a
 * transfer. */
void
elk__noc_pool_in_use (const NocSim *s, guint8 *in_use)
{
  for (guint32 i = 0; i < s->pool_cap; i++)
    in_use[i] = (s->pool_fmap[i / 64] >> (i & 63) & 1) == 0;
}

G_GNUC_NO_INLINE static void
arrival_pool_grow (NocSim *s)
{
  guint32 old = s->arr_chunks, cap = MAX (256u, 2 * old);
  NocArrival *arr = big_alloc ((gsize) cap * CHUNK, sizeof (NocArrival));

  if (old > 0)
    memcpy (arr, s->arr, (gsize) old * CHUNK * sizeof (NocArrival));
  g_aligned_free (s->arr);
  s->arr = arr;
  s->chunk_next = g_renew (guint32, s->chunk_next, cap);
  for (guint32 i = old; i < cap; i++)
    s->chunk_next[i] = i + 1 < cap ? i + 1 : s->chunk_free;
  s->chunk_free = old;
  s->arr_chunks = cap;
}

/* Appends the arrival of pool slot @slot at link @link to bucket @b;
 * returns its index.  May move s->arr: callers hold indices, not
 * pointers, across calls. */
static inline guint32
bucket_append (NocSim *s, guint32 b, guint32 slot, const NocTrain *t)
{
  NocBucket *B = &s->bucket[b];
  guint32 e;

  if (B->first == NONE || B->fill == CHUNK)
    {
      guint32 ch;
      if (G_UNLIKELY (s->chunk_free == NONE))
        arrival_pool_grow (s);
      ch = s->chunk_free;
      s->chunk_free = s->chunk_next[ch];
      s->chunk_next[ch] = NONE;
      if (B->first == NONE)
        {
          B->first = ch;
          s->bmap[b >> 6] |= G_GUINT64_CONSTANT (1) << (b & 63);
        }
      else
        s->chunk_next[B->last] = ch;
      B->last = ch;
      B->fill = 0;
    }
  e = B->last * CHUNK + B->fill++;
  s->arr[e].slot = slot;
  s->arr[e].link = t->link;
  return e;
}

/* Gives bucket @b's chunks back. */
void
elk__noc_bucket_clear (NocSim *s, guint32 b)
{
  NocBucket *B = &s->bucket[b];

  s->serve_ch = NONE;
  s->serve_i = 0;
  if (B->first == NONE)
    return;
  s->chunk_next[B->last] = s->chunk_free;
  s->chunk_free = B->first;
  B->first = B->last = NONE;
  s->bmap[b >> 6] &= ~(G_GUINT64_CONSTANT (1) << (b & 63));
}

/* A new transfer of @bytes whose head is at @head, injected now (for the
 * tie-break); the caller places it, sets its first link and hands it to
 * elk__noc_train_inject(). */
void
elk__noc_train_init (NocSim *s,
                     NocTrain *t,
                     double head,
                     double tail,
                     double bytes,
                     gboolean capped,
                     guint8 kind,
                     guint dst)
{
  t->head = head;
  t->tail = tail;
  t->bytes = bytes;
  t->capped = (guint8) capped;
  t->ser = bytes / MIN (elk__noc_train_cap (s, t), s->cfg.link_bw);
  t->seq = s->train_seq++;
  t->dst = dst;
  t->hops = 0;
  t->kind = kind;
  t->crossed = 0;
  /* All-to-all routes by link alone and never sets the router fields;
   * they are zeroed so that nothing (a steady-state snapshot, a debugger)
   * reads whatever the pool slot held before. */
  t->chip = 0;
  t->r = t->c = t->tr = t->tc = 0;
  t->stage = 0;
}

/* Puts arrival @e into its link's queue for the current window: a chain,
 * newest first, through the arrivals. */
static inline void
link_enqueue (NocSim *s, guint32 e)
{
  NocLinkState *l = &s->ls[s->arr[e].link];

  s->arr[e].next = l->queue;
  l->queue = e;
}

static inline gint64
window_of (const NocSim *s, double t)
{
  return (gint64) (t * s->inv_w);
}

/* Files the arrival of the head of the transfer in pool slot @slot at its
 * link: in the current window straight into the link's queue, in the
 * ring's horizon into its window's bucket, beyond it into the heap. */
G_ALWAYS_INLINE static inline void
train_schedule (NocSim *s, guint32 slot)
{
  const NocTrain *t = &s->pool[slot];
  gint64 w = window_of (s, t->head);

  if (w <= s->cur_w)
    link_enqueue (s, bucket_append (s, (guint32) s->cur_w & (RING_N - 1), slot,
                                    t));
  else if (w - s->cur_w < (gint64) RING_N)
    {
      bucket_append (s, (guint32) w & (RING_N - 1), slot, t);
      s->ring_n++;
      if (w < s->ring_lo)
        s->ring_lo = w;
    }
  else
    elk__noc_heap_push (s, t->head, EV_HOP, slot);
}

/* Puts a new transfer @t into the pool and files its first arrival. */
void
elk__noc_train_inject (NocSim *s, const NocTrain *t)
{
  guint32 slot = train_alloc (s);

  s->pool[slot] = *t;
  train_schedule (s, slot);
}

/* An arrival from the heap (of the transfer in pool slot @slot) joins the
 * current window. */
void
elk__noc_far_arrive (NocSim *s, guint32 slot)
{
  link_enqueue (s, bucket_append (s, (guint32) s->cur_w & (RING_N - 1), slot,
                                  &s->pool[slot]));
}

/* The first window after the current one with a bucket in the ring; the
 * ring must not be empty.  ring_lo saves rescanning empty windows. */
gint64
elk__noc_ring_next (NocSim *s)
{
  gint64 from = MAX (s->cur_w + 1, s->ring_lo);
  guint32 start = (guint32) from & (RING_N - 1);
  guint32 wi = start >> 6;
  guint64 m = s->bmap[wi] & (~G_GUINT64_CONSTANT (0) << (start & 63));
  gint64 w;

  for (guint n = 0; m == 0 && n < RING_N / 64; n++)
    {
      wi = (wi + 1) & (RING_N / 64 - 1);
      m = s->bmap[wi];
    }
  g_assert (m != 0);
  w = from
      + (((wi << 6) + (guint32) __builtin_ctzll (m) - start) & (RING_N - 1));
  s->ring_lo = w;
  return w;
}

/* How many arrivals chunk @ch of bucket @B holds: every chunk but the
 * last is full. */
static inline guint32
chunk_fill (const NocBucket *B, guint32 ch)
{
  return ch == B->last ? B->fill : CHUNK;
}

/* Asks for the lines of chunk @ch's arrivals (all of them: the unused
 * end of the last chunk of a bucket costs a few prefetches). */
static inline void
chunk_prefetch_arrivals (NocSim *s, guint32 ch)
{
  for (guint32 i = 0; i < CHUNK; i += 64 / sizeof (NocArrival))
    __builtin_prefetch (&s->arr[(gsize) ch * CHUNK + i], 1);
}

/* Asks for the lines that serving the arrivals of chunk @ch (its @n
 * first) will touch: their transfers (in the pool) and their links'
 * state. */
static inline void
chunk_prefetch_targets (NocSim *s, guint32 ch, guint32 n)
{
  const NocArrival *a = s->arr + (gsize) ch * CHUNK;

  for (guint32 i = 0; i < n; i++)
    {
      __builtin_prefetch (&s->pool[a[i].slot], 1);
      __builtin_prefetch (&s->ls[a[i].link], 1);
    }
}

/* Asks for the lines of bucket @b's arrivals, or with @targets for the
 * transfers and link states they touch, of at most @max_ch of its chunks. */
static inline void
bucket_prefetch (NocSim *s, guint32 b, guint32 max_ch, gboolean targets)
{
  const NocBucket *B = &s->bucket[b];
  guint32 k = 0;

  for (guint32 ch = B->first; ch != NONE && k < max_ch;
       ch = s->chunk_next[ch], k++)
    if (targets)
      chunk_prefetch_targets (s, ch, chunk_fill (B, ch));
    else
      chunk_prefetch_arrivals (s, ch);
}

/* Puts the arrivals of the current window's bucket into their links'
 * queues.
 *
 * A bucket is filled while the windows before it are served, often long
 * before (a transfer queued behind a busy link is filed for when it will
 * start), so its arrivals, their transfers and their links' state are
 * mostly out of the cache when its window comes, and a window has a few
 * dozen arrivals on the mesh: one miss after the other would leave the
 * memory system idle.  So the lines are asked for ahead, as a pipeline
 * over the windows: the arrivals of the window after next, the transfers
 * and link states of the next window's arrivals (those filed so far,
 * which are the cold ones), and those of this window one chunk ahead of
 * its enqueueing (a chunk's 64 arrivals are 128 lines); the window is
 * then served out of the cache. */
void
elk__noc_ring_drain (NocSim *s)
{
  guint32 b = (guint32) s->cur_w & (RING_N - 1);
  NocBucket *B = &s->bucket[b];

  bucket_prefetch (s, (b + 2) & (RING_N - 1), LOOKAHEAD_CHUNKS, FALSE);
  bucket_prefetch (s, (b + 1) & (RING_N - 1), LOOKAHEAD_CHUNKS, TRUE);
  if (B->first != NONE)
    chunk_prefetch_targets (s, B->first, chunk_fill (B, B->first));
  for (guint32 ch = B->first; ch != NONE; ch = s->chunk_next[ch])
    {
      guint32 n = chunk_fill (B, ch), nx = s->chunk_next[ch];
      if (nx != NONE)
        {
          /* A long bucket: its arrivals two chunks on, too. */
          if (s->chunk_next[nx] != NONE)
            chunk_prefetch_arrivals (s, s->chunk_next[nx]);
          chunk_prefetch_targets (s, nx, chunk_fill (B, nx));
        }
      for (guint32 i = 0; i < n; i++)
        link_enqueue (s, ch * CHUNK + i);
      s->ring_n -= n;
      s->events += n;
    }
}

/* Whether link @li is a shared link that carries several transfers at
 * once (see link_share_end()): the HBM controllers' attachments and the
 * inter-chip link.  The core links (ports, mesh, torus and ring links)
 * stay FIFO servers of one transfer at a time: a core's egress port is
 * its network agent, whose 1/G is the core's rate whatever it sends, and
 * a core link's bandwidth (5.5 GB/s) is about one capped transfer's
 * (4.73 GB/s) anyway.  So do the all-to-all's private preload ports: a
 * throttled preload copy's cap is the program's preload share of its
 * holder's port (elk__noc_preload_analytic_s() delivers a core's cold
 * bytes at share * link-bw), a budget of the port, not of one copy. */
G_ALWAYS_INLINE static inline gboolean
link_is_shared (const NocSim *s, guint32 li)
{
  return li >= s->n_core_links && (s->priv_base == 0 || li < s->priv_base);
}

/* The service of @bytes, capped at @cap, at shared link @li of bandwidth
 * B, whose head arrives at @head and whose tail left the previous link
 * at @tail: returns when its tail leaves this link, and sets *@st to
 * when its head enters the link and *@slot, *@occ to the capacity it
 * took.
 *
 * A shared link is much wider than what one transfer may carry (the
 * inter-chip link's 640 GB/s against a core's 1/G = 4.73 GB/s), so it
 * carries many transfers at once.  It is modelled as a virtual clock:
 * the link accepts transfers in arrival order, each for bytes/B of its
 * capacity, its slot (*@slot, *@occ: free_at advances by bytes/B only),
 * so that over any busy period the link never accepts more than B times
 * its length; each transfer streams at its own rate, min (cap, B), and
 * enters the link as late as lets it finish by the end of its slot (but
 * not before its head arrived), so its tail leaves at the latest of its
 * slot's end, its head plus its own time, and its tail from the previous
 * link plus the hop latency.  For transfers of one cap that is exactly B
 * / cap lanes: N transfers of S bytes reaching the link together leave
 * B / cap at a time, in max (N S / B, S / cap) in all, the fluid
 * optimum.  A lanes model would need a lane width per cap when preload
 * copies (capped at a preload share, or not at all) and core transfers
 * share a link; the virtual clock takes them all.  The old model, one
 * FIFO server at each transfer's own cap, let a 640 GB/s link carry core
 * traffic at 4.73 GB/s (issue 18, docs/fidelity.md). */
G_ALWAYS_INLINE static inline double
link_share_end (NocSim *s,
                guint32 li,
                double head,
                double tail,
                double bytes,
                double cap,
                double *st,
                double *slot,
                double *occ)
{
  NocLinkState *l = &s->ls[li];
  double bw = s->links[li].bw, own = bytes / MIN (cap, bw);
  double end, vend, lat = s->cfg.hop_latency;

  *occ = bytes / bw;
  *slot = head > l->free_at ? head : l->free_at;
  vend = *slot + *occ;
  l->free_at = vend;
  *st = vend - own > head ? vend - own : head;
  end = *st + own;
  if (end < tail + lat)
    end = tail + lat;
  return end;
}

/* One FIFO service of @bytes at link @li, at @rate at most: it starts when
 * both the head (at @head) and the link are free, and it ends no earlier
 * than the tail (at @tail) has crossed the hop, since the tail cannot
 * leave before it arrived from the previous link.  *@ser comes in as a
 * core link's serialisation time; a link off the core links has its own
 * bandwidth.  Returns the end, with the start in *@st. */
G_ALWAYS_INLINE static inline double
link_fifo_end (NocSim *s,
               guint32 li,
               double head,
               double tail,
               double bytes,
               double rate,
               double *st,
               double *ser)
{
  NocLinkState *l = &s->ls[li];
  double end, lat = s->cfg.hop_latency;

  if (G_UNLIKELY (li >= s->n_core_links))
    *ser = bytes / MIN (rate, s->links[li].bw);
  *st = head > l->free_at ? head : l->free_at;
  end = *st + *ser;
  if (end < tail + lat)
    end = tail + lat;
  l->free_at = end;
  return end;
}

/* One service of the transfer in pool slot @slot at link @li: FIFO on a
 * core link, shared on the attachments and the inter-chip link. */
G_ALWAYS_INLINE static inline void
train_serve (NocSim *s, guint32 li, guint32 slot, guint topo)
{
  NocLinkState *l = &s->ls[li];
  NocTrain *t = &s->pool[slot];
  /* Every link a transfer crosses has the hop latency; the attachments
   * and the inter-chip link have their own bandwidth. */
  double ser = t->ser, st, vslot = 0, end, lat = s->cfg.hop_latency;
  gboolean shared = link_is_shared (s, li);

  if (G_UNLIKELY (shared))
    end = link_share_end (s, li, t->head, t->tail, t->bytes,
                          elk__noc_train_cap (s, t), &st, &vslot, &ser);
  else
    end = link_fifo_end (s, li, t->head, t->tail, t->bytes,
                         elk__noc_train_cap (s, t), &st, &ser);
  l->busy += ser;
  l->bytes += t->bytes;
  /* The trace shows a shared link's slots (what it accepted), so that
   * its spans do not overlap. */
  if (G_UNLIKELY (s->link_tracks) && s->trace != NULL
      && s->links[li].track >= 0)
    elk_trace_add_span (s->trace, (guint) s->links[li].track, s->cur_name,
                        shared ? vslot : st, shared ? ser : end - st);
  t->tail = end;
  t->hops++;
  train_cross_in (s, t, topo);
  t->link = train_route_in (s, t, topo);
  if (t->link == NONE)
    {
      elk__noc_train_arrive (s, t, end + lat);
      train_release (s, slot);
    }
  else
    {
      t->head = st + lat;
      train_schedule (s, slot);
    }
}

static int
sortkey_cmp (const void *a, const void *b)
{
  const struct NocSortKey *x = a, *y = b;

  if (x->head != y->head)
    return x->head < y->head ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts the @n keys @k into ascending order; @u first are already. */
static void
sortkeys_finish (struct NocSortKey *k, guint32 n, guint32 u)
{
  while (u < n && sortkey_cmp (&k[u - 1], &k[u]) <= 0)
    u++;
  if (u == n)
    return;
  if (n > 32)
    {
      qsort (k, n, sizeof *k, sortkey_cmp);
      return;
    }
  for (guint32 i = u; i < n; i++)
    {
      struct NocSortKey x = k[i];
      guint32 j = i;
      while (j > 0 && sortkey_cmp (&k[j - 1], &x) > 0)
        {
          k[j] = k[j - 1];
          j--;
        }
      k[j] = x;
    }
}

/* Link @li serves the arrivals in its queue in arrival order (ties:
 * injection order). */
G_ALWAYS_INLINE static inline void
serve_link_in (NocSim *s, guint32 li, guint topo)
{
  NocLinkState *l = &s->ls[li];
  struct NocSortKey *k = s->sortbuf;
  guint32 n = 0, d;

  /* About half the hops of the mesh benchmark come through here (on
   * one layer, 12.2 M of 23.6 M arrivals were at links with 2-12 others
   * in their window).  One pass over the queue reads the keys: the
   * loads of the transfers' lines do not depend on each other, so the
   * processor overlaps their misses without a prefetch pass before
   * (which cost a second walk of the queue).  The keys come out newest
   * first, the queue's order. */
  for (guint32 x = l->queue; x != NONE; n++)
    {
      guint32 slot = s->arr[x].slot, nx = s->arr[x].next;
      if (G_UNLIKELY (n == s->sortbuf_cap))
        {
          s->sortbuf_cap = MAX (1024u, 2 * s->sortbuf_cap);
          s->sortbuf = g_renew (struct NocSortKey, s->sortbuf, s->sortbuf_cap);
          k = s->sortbuf;
        }
      k[n].head = s->pool[slot].head;
      k[n].seq = s->pool[slot].seq;
      k[n].id = slot;
      s->arr[x].next = SERVED;
      x = nx;
    }
  l->queue = NONE;
  /* A core's transfers of one round reach its first link together, in
   * order, so the keys are mostly in descending order: then they are
   * served from the end.  Otherwise they are turned round and sorted
   * (the order is total, (head, seq) being unique, so any sort serves
   * the same order). */
  for (d = 1; d < n && sortkey_cmp (&k[d], &k[d - 1]) <= 0; d++)
    ;
  if (d >= n)
    {
      for (guint32 i = n; i-- > 0;)
        train_serve (s, li, k[i].id, topo);
      return;
    }
  for (guint32 i = 0, j = n - 1; i < j; i++, j--)
    {
      struct NocSortKey x = k[i];
      k[i] = k[j];
      k[j] = x;
    }
  sortkeys_finish (k, n, 1);
  for (guint32 i = 0; i < n; i++)
    {
      if (i + 4 < n)
        __builtin_prefetch (&s->pool[k[i + 4].id], 1);
      train_serve (s, li, k[i].id, topo);
    }
}

G_GNUC_NO_INLINE static void
serve_link_mesh (NocSim *s, guint32 li)
{
  serve_link_in (s, li, ELK_TOPOLOGY_MESH);
}

G_GNUC_NO_INLINE static void
serve_link_any (NocSim *s, guint32 li)
{
  serve_link_in (s, li, TOPO_ANY);
}

/* Every link with arrivals in the current window serves them in arrival
 * order (ties: injection order).  Links serve in the order of their
 * first arrival in the window's bucket (which is the order the arrivals
 * joined the links' queues), picking up where the last call stopped:
 * heap events between two calls add arrivals at the bucket's end.  Most
 * links have one arrival per window, served straight from the bucket. */
G_ALWAYS_INLINE static inline void
serve_window_in (NocSim *s, guint topo)
{
  NocBucket *B = &s->bucket[(guint32) s->cur_w & (RING_N - 1)];
  guint32 ch = s->serve_ch, i = s->serve_i;

  for (;;)
    {
      guint32 n;
      if (ch == NONE)
        {
          ch = B->first;
          i = 0;
          if (ch == NONE)
            break;
        }
      n = chunk_fill (B, ch);
      if (i == n)
        {
          if (ch == B->last)
            break;
          ch = s->chunk_next[ch];
          i = 0;
          continue;
        }
      /* The chunk's arrivals known now; the outer loop looks again when
       * serving has filed more into the current window. */
      for (; i < n;)
        {
          guint32 e = ch * CHUNK + i++, li;
          if (i + 2 * PREFETCH_ARRIVALS < n)
            __builtin_prefetch (&s->arr[e + 2 * PREFETCH_ARRIVALS], 1);
          if (i + PREFETCH_ARRIVALS < n)
            {
              const NocArrival *p = &s->arr[e + PREFETCH_ARRIVALS];
              __builtin_prefetch (&s->pool[p->slot], 1);
              __builtin_prefetch (&s->ls[p->link], 1);
            }
          if (s->arr[e].next == SERVED)
            continue;
          li = s->arr[e].link;
          if (s->ls[li].queue == e && s->arr[e].next == NONE)
            {
              /* The link's only arrival so far. */
              s->ls[li].queue = NONE;
              s->arr[e].next = SERVED;
              train_serve (s, li, s->arr[e].slot, topo);
            }
          else if (topo == ELK_TOPOLOGY_MESH)
            serve_link_mesh (s, li);
          else
            serve_link_any (s, li);
        }
    }
  s->serve_ch = ch;
  s->serve_i = i;
}

G_GNUC_NO_INLINE static void
serve_window_mesh (NocSim *s)
{
  serve_window_in (s, ELK_TOPOLOGY_MESH);
}

G_GNUC_NO_INLINE static void
serve_window_any (NocSim *s)
{
  serve_window_in (s, TOPO_ANY);
}

void
elk__noc_serve_window (NocSim *s)
{
  if (s->cfg.topology == ELK_TOPOLOGY_MESH)
    serve_window_mesh (s);
  else
    serve_window_any (s);
}

/* ---------------------------------------------------------------------- */
/* Route booking (arbitration = booking): a transfer reserves its whole
 * route when it is sent, so links serve transfers in send order. */

void
elk__noc_walk_start (NocWalk *w, double head, double tail)
{
  w->head = head;
  w->tail = tail;
  w->arrive = head;
  w->max_ser = 0;
  w->lat_sum = 0;
}

/* Walks s->path[0..n): one FIFO service per link, behind what the link
 * already accepted.  Most links of a route share one bandwidth, so the
 * serialisation time is computed once per bandwidth change. */
void
elk__noc_walk_path (NocSim *s, NocWalk *w, double bytes, double rate, guint n)
{
  /* Routes cross only links of the hop latency; the attachments and the
   * inter-chip link have their own bandwidth.  Only the state array is
   * touched per hop. */
  double lat = s->cfg.hop_latency;
  double ser_core = bytes / (s->cfg.link_bw < rate ? s->cfg.link_bw : rate);

  for (guint i = 0; i < n; i++)
    {
      guint32 li = s->path[i];
      NocLinkState *ls = &s->ls[li];
      double st, slot = 0, end, ser = ser_core;
      gboolean shared = link_is_shared (s, li);
      if (G_UNLIKELY (shared))
        end = link_share_end (s, li, w->head, w->tail, bytes, rate, &st, &slot,
                              &ser);
      else
        end = link_fifo_end (s, li, w->head, w->tail, bytes, rate, &st, &ser);
      ls->busy += ser;
      ls->bytes += bytes;
      if (G_UNLIKELY (s->link_tracks) && s->trace != NULL
          && s->links[li].track >= 0)
        elk_trace_add_span (s->trace, (guint) s->links[li].track, s->cur_name,
                            shared ? slot : st, shared ? ser : end - st);
      w->head = st + lat;
      w->tail = end;
      /* The ideal counts a shared link at the transfer's own rate, as
       * elk__noc_train_arrive() does. */
      if (shared)
        ser = bytes / MIN (s->links[li].bw, rate);
      if (ser > w->max_ser)
        w->max_ser = ser;
    }
  if (n > 0)
    w->arrive = w->tail + lat;
  w->lat_sum = n * lat;
  s->hops += n;
}
