/*
 * Block shape of the hopper-tier attention kernel (kernels/attention_hopper.cu), shared with
 * the host that sizes its grid and its dynamic shared memory (src/gpu/variants.c,
 * src/gpu/hopper_launch.c).
 */
#ifndef KILN_ATTENTION_HOPPER_H
#define KILN_ATTENTION_HOPPER_H

/* The long variant (key ...q192.hopper, compiled with KILN_HOPPER_LONG=1): for calls with
 * at least KILN_HOPPER_LONG_MIN_KEYS keys per split, head dim 64 without a mask or causal,
 * in blocks of three consumers (below). The causal one stores its output straight from the
 * accumulators (kernels/attention_hopper.cu, KILN_HOPPER_STAGE_O): staged, it spilled 24
 * bytes in 160 registers; so it spilled 4 (an 8-byte frame), and since the output's
 * reordering (below, at KILN_HOPPER_FRESH_OUT) none.
 * Measured on an H200 against two consumers (bench/hopper_ab.sh, c3cd beside staged,
 * bench/results/hopper-ab_c3cd_*): causal S = 4k 417 against 403 TFLOP/s, 16k 492 against
 * 440 (cuDNN 417-418 and 447-451 in that run); without turns between its consumers
 * (c3cdn) it does not spill but ran 398 and 462. On an H100 (c2c, the two-consumer one
 * beside it, bench/results/hopper-ab_c2c_*): 410.6 against 391.6 at 4k, 473.1 against 434.3
 * at 16k (cuDNN 409-411 and 441-448). From 1k keys instead (long1k beside the defaults,
 * three passes each, bench/results/hopper-ab_tcsum-skipexp_*): S = 1k without a mask 407.0
 * against 409.7 TFLOP/s, causal 257.0 against 298.9, so the threshold stays at 4k. */
#ifndef KILN_HOPPER_LONG_MIN_KEYS
#define KILN_HOPPER_LONG_MIN_KEYS 4096
#endif
#ifndef KILN_HOPPER_LONG_COVERS
#define KILN_HOPPER_LONG_COVERS(d, m) ((d) == 64 && (m) != 2)
#endif

/* Head dims and masks the tier compiles: 64 and 128 with every mask, 256 without a window
 * (whose band arithmetic beside 128 output accumulators a thread spills 20 bytes in the 240
 * registers a consumer has; windowed calls of head dim 256 run on the tensor tier). */
#define KILN_HOPPER_HEAD_DIM_OK(d) ((d) == 64 || (d) == 128 || (d) == 256)
#define KILN_HOPPER_MASK_OK(d, m) ((d) != 256 || (m) != 2)

/* Consumer warpgroups per block of head dim d, mask m and long flag l (above), each owning
 * 64 query rows of one head: the block's query tile has 64 rows per consumer
 * (KILN_HOPPER_BLOCK_Q) and its threads one warpgroup more (the producer). Two consumers
 * hold 240 registers a thread, three 160 (KILN_HOPPER_REGS_MMA): room for head dim 64's
 * state in key tiles of 128 (64 scores, 32 output accumulators and 32 registers of P a
 * thread), not at head dim 128. Three consumers keep the tensor cores busier (one's
 * softmax behind two others' products) but their 192-row tiles compute more masked and
 * past-the-end rows. Measured on an H200 (bench/hopper_ab.sh, c3 and c3n against two
 * consumers, bench/results/hopper-ab_c3_*): without a mask S = 1k +0.7%; at 4k and 16k
 * 485 and 510 TFLOP/s, 1.05-1.09 of cuDNN in that run, where the two-consumer variant in
 * key tiles of 192 that ran there before had reached 0.98-1.01 of it (its own run,
 * bench/results/hopper-ab_slack_*); causal S = 1k -18% (a third more products than in
 * 128-row tiles), 4k +1%, 16k +10%. Hence three consumers in the long variant only.
 * One consumer per block and two blocks per SM (2 stages each, so that the two blocks'
 * item boundaries fall apart; bb0df12, bench/hopper_ab.sh solo beside staged on an H100,
 * bench/results/hopper-ab_solo_*) ran head dim 64 S = 1k 3% slower without a mask and 13%
 * slower causal (263.6 against 302.1), and at 4k and 16k 9-15% slower: a block's two
 * consumers taking turns beat two blocks that do not coordinate, and it was taken back. */
#ifndef KILN_HOPPER_CONSUMERS
#define KILN_HOPPER_CONSUMERS(d, m, l) ((l) && KILN_HOPPER_LONG_COVERS(d, m) ? 3 : 2)
#endif
#define KILN_HOPPER_CONSUMER_ROWS 64 /* query rows of one consumer: a wgmma's M */
#define KILN_HOPPER_BLOCK_Q(d, m, l) (KILN_HOPPER_CONSUMER_ROWS * KILN_HOPPER_CONSUMERS(d, m, l))
/* Keys per shared-memory tile per head dim d and mask m (KILN_MASK_*: 0 full, 1 causal,
 * 2 window): 64, 128, 160, 176 or 192 (the S product's N; kernels/hopper.h has those
 * shapes). Measured on an H200 with two consumers (bench/hopper_ab.sh, k160): head dim 64
 * without a mask in tiles of 192 ran S = 16k 5% and S = 4k 1% faster than 128, S = 1k 8%
 * slower (the sixth tile of 1024 keys is a third full; three consumers in tiles of 128
 * beat it, above); head dim 128 in tiles of 160 within 1% of 128 at S >= 4k and 5% slower
 * at 1k, tiles of 176 spill. */
/* Head dim 256 takes tiles of 64 keys: a K or V tile of 128 keys (64 KiB) would leave room
 * for one stage beside Q. */
#ifndef KILN_HOPPER_BLOCK_K
#define KILN_HOPPER_BLOCK_K(d, m) ((d) == 256 ? 64 : 128)
#endif
/* K and V tiles in flight per head dim d and mask m. 4 stages at head dim 64 (160 KiB of
 * shared memory) ran within 1% of 3 on every suite-2 shape of an H200, 1% slower at S = 1k
 * causal (bench/results/hopper-stages-ab_main-0da4112_*); head dim 128 has room for 3 only,
 * and for 2 beside an output tile of its own (KILN_HOPPER_O_OWN below). */
#ifndef KILN_HOPPER_STAGES
#define KILN_HOPPER_STAGES(d, m) ((d) == 256 || ((d) == 128 && KILN_HOPPER_O_OWN(d, m)) ? 2 : 3)
#endif
/* Threads of a block: the producer warpgroup and the consumers. */
#define KILN_HOPPER_THREADS(d, m, l) (128 * (1 + KILN_HOPPER_CONSUMERS(d, m, l)))

/* Launch shape per head dim d. 0: one block per query tile, grid (tiles, heads_q, batch x
 * splits), the hardware hands tiles to SMs as they free up. 1: a persistent grid of at most
 * one block per SM that walks the work items itself (kernels/attention_hopper.cu, hp_step),
 * so one item's loads overlap the previous one's output. Measured on an H200 (BENCH.md
 * suite 2, bench/hopper_ab.sh): persistent ran head dim 64 3-15% faster (most at S = 1k,
 * where a block has 8 key tiles). At head dim 128 (2 stages and an output tile of its own,
 * the p2 alternative, spill-free since the output's addresses are no longer hoisted out of
 * the item loop) it ran causal 8% faster at S = 1k, 5% at 4k and even at 16k, and without a
 * mask 3% faster at 1k but 1-2% slower at 4k and 16k (bench/results/hopper-ab_p2-*). With
 * two later runs (bench/results/hopper-ab_defer-*, hopper-ab_p128-defer_*; one with and one
 * without deferred output stores) persistent / per-tile at head dim 128 without a mask was
 * 1.03-1.06 at S = 1k, 0.98-1.01 at 4k and 0.98-1.00 at 16k, so it takes the persistent grid
 * too: S = 1k is where the tier is furthest below cuDNN. A window mask (m, KILN_MASK_*: 2)
 * stays off it: its band arithmetic makes that path spill. */
#ifndef KILN_HOPPER_PERSISTENT
#define KILN_HOPPER_PERSISTENT(d, m) ((m) != 2)
#endif

/* Whether the output of a block is staged in its own shared-memory tile (1) or in the Q
 * tile's rows (0, Q then reloads only after the output is written). Its own tile pays off
 * on the persistent grid only (at head dim 128 beside 2 stages). Head dim 256 has no room
 * for it: Q (64 KiB) and two stages of 64-key K and V tiles (128 KiB) fill the block's
 * shared memory. */
#ifndef KILN_HOPPER_O_OWN
#define KILN_HOPPER_O_OWN(d, m) ((d) != 256 && KILN_HOPPER_PERSISTENT(d, m))
#endif

/* One Q tile in shared memory: the producer loads an item's Q once the consumers' last S
 * product of the item before has read the tile (the next item's first product may wait for
 * that load behind the item's last softmax, P V product and output). Two tiles, items
 * alternating between them so that an item's Q loads ahead of its first key tile (with an
 * output tile of their own), measured on an H100 (bench/hopper_ab.sh at 5509eae, q2 and
 * q2all beside staged, one run, bench/results/hopper-ab_q2_*): head dim 64 causal S = 1k
 * 7.5% slower (279.6 against 302.2 TFLOP/s), without a mask 1% slower; head dim 128 within
 * the run's noise. The next item's Q is not what holds a block at an item's boundary; the
 * option was taken out. Nor is the next item's first S product: issued before this item's
 * output is written (two consumers, an output tile of their own), head dim 64 S = 1k ran
 * within 1% of the defaults on an H100, 1k causal 5-6% slower, head dim 128 0-4% slower
 * (bench/results/hopper-ab_early_*, patch beside it); taken out too. Nor is the Q load's
 * trip to device memory, though Nsight Compute puts a consumer's longest wait at an item's
 * start on Q's barrier: the producer bringing the next item's Q tile into L2 when it loads
 * this item's (cp.async.bulk.prefetch.tensor) ran within the run's noise of the kernel
 * without it on an H100 (qpf beside staged, bench/results/hopper-ab_epi-qpf_*): head dim 64
 * S = 1k 411.4 / 410.5 / 409.6 TFLOP/s against 411.9 / 410.5 / 409.3, 4k 2-4% slower, head
 * dim 128 1k -0.1 .. -6%; taken out. */

/* Per head dim d, 1: each row's reference (the running max its weights are taken against,
 * base-2 units) moves only when a tile's max passes it by more than KILN_HOPPER_RESCALE_SLACK,
 * and a warp rescales its O accumulators after a tile only when one of its rows moved (the
 * factor is exactly 1 otherwise); 0: every row follows its max and O is rescaled after every
 * tile. Weights are then at most 2^slack (256, far inside fp16's range; the element types'
 * relative rounding does not depend on magnitude), and the output and LSE divide by a sum
 * taken against the same reference. Measured on an H200 (bench/hopper_ab.sh, eager) with no
 * slack (a row moved whenever its max did): at head dim 128 (64 accumulators a thread)
 * skipping ran 0-2.4% faster, at 64 (32) the vote cost more than the multiplies it saved
 * (2-5% slower). The slack of 8 against none (ALTS="staged exact lazy64",
 * bench/results/hopper-ab_slack_*): head dim 128 +2.8% at S = 1k, +5.5 - 5.9% at 4k and 16k,
 * +2.2 - 2.3% causal at 4k and 16k, -1.6% causal at 1k; with it at head dim 64 as well
 * (lazy64) 3-6% slower there, so not taken. */
#ifndef KILN_HOPPER_LAZY_RESCALE
#define KILN_HOPPER_LAZY_RESCALE(d) ((d) >= 128)
#endif
#ifndef KILN_HOPPER_RESCALE_SLACK
#define KILN_HOPPER_RESCALE_SLACK 8.0f
#endif

/* Per head dim d, 1: the consumers read their thread coordinates anew for each item's
 * output (kernels/attention_hopper.cu), so the output addresses are not held in registers
 * through the key loop; without it the persistent head-dim-128 consumer spills 24-64 bytes,
 * and three consumers (NC, expanded in the kernel) in 160 registers 112 - 160. Elsewhere
 * holding them ran head dim 64 1-4% faster at S = 1k and 4k on an H200 (bench/hopper_ab.sh,
 * bench/results/hopper-ab_held64-*: this default was the alternative held64 there, 1
 * everywhere the defaults; fresh64 now). */
/* The output (kernels/attention_hopper.cu): row sums, their inverses and the staging tile
 * first, then the item (from a per-warp shared-memory slot, HP_ITEM_SLOT, or worked out
 * again under the causal mask), the LSE only where it is stored, and the staged rows read
 * back whole before one computed address and a fixed step store them. With the reordering
 * alone Nsight Compute still counted 346 instructions a warp and item there (the walk
 * worked out again, 64-bit addresses per 16-byte store, LSE branches;
 * bench/results/ncu_hopper-d64-s1k_epi-*); the trace (bench/hopper_trace.py) put 1475 cycles
 * between the last P V product and the stores before, 895 after (head dim 64 S = 1k, no
 * mask; the item 240 -> 80, rows and LSE 524 -> 100 cycles). Same-run A/B on an H100 against
 * the kernel before (bench/hopper_ab.sh, three passes each, bench/results/hopper-ab_epi-qpf_*):
 * head dim 64 S = 1k 411.9 / 410.5 / 409.3 TFLOP/s against 392.2 / 395.1 / 394.2 (+3.8 ..
 * +5.0%), 4k +0.8 .. +2.1%, head dim 128 1k +1.7 .. +3.9%. Its causal variants ran 12-20%
 * slower there: with the item slot ptxas serialized their warpgroup MMAs; they take the
 * walk again now. That form against the kernel before the change, three passes each in one
 * run on an H100 (ALTS="... neither pre", bench/results/hopper-ab_tcsum-skipexp_*), means
 * of the passes: head dim 64 S = 1k 409.7 against 397.0 TFLOP/s (+3.1%), causal 298.9
 * against 293.5 (+1.8%), 4k and 4k causal -0.3 / -0.8%, head dim 128 1k +1.4%, causal
 * +0.2%. (The slot's C7520 comes from the item read back from shared memory beside the
 * predicated last P V product, HP_SKIP_PV: with either gone ptxas keeps the MMAs
 * asynchronous.) The reordering alone (bench/results/hopper-ab_stage-first_*) moved head
 * dim 64 S = 1k by -1% and causal by +1%, within the run's noise. */
#ifndef KILN_HOPPER_FRESH_OUT
#define KILN_HOPPER_FRESH_OUT(d) ((d) >= 128 || NC == 3)
#endif
/* A per-item diet measured against the kernel above in two same-run A/Bs on an H100
 * (bench/hopper_ab.sh, staged / again64 / fence beside pre; the change is
 * bench/results/hopper-ab_item-held_nvidia-h100_2026-12-06_patch.diff, the runs
 * hopper-ab_item-held_run{1,2}_*): the item kept in registers through the key loop at head
 * dim 64 instead of worked out again for the output (Nsight Compute had the persistent
 * walk's divisions at about a sixth of a head-dim-64 causal item's 1053 instructions a warp),
 * the walk in 32-bit arithmetic, the LSE and ALiBi parameters tested once per block, and no
 * proxy fence after copying out a staging tile of the block's own. Head dim 64 causal
 * S = 1k ran 243.8 and 254.4 TFLOP/s against 297.7 and 282.9 (the kept item alone: with it
 * worked out again, 284.2), without a mask 397.1 / 386.9 against 387.9 / 386.5; head dim
 * 128, where only the walk and the parameter tests changed, 3% slower without a mask at
 * every length in both runs (e.g. 4k 584.4 / 589.1 against 605.2 / 608.1). Not taken. */

/* 1: each row's max and sum over a tile in four partial chains (kernels/attention_hopper.cu,
 * hp_softmax) rather than one. Nsight Compute (bench/ncu_run.sh, head dim 64, S = 1k) put a
 * third of the key loop's stall samples on fixed-latency dependencies, the row max a chain
 * of 32 dependent FMNMX per row among them. Measured on an H200 (bench/hopper_ab.sh, tree0
 * and pre against the defaults, bench/results/hopper-ab_tree-p2_*): head dim 64 +1.4 to
 * +3.8% without a mask, -0 to +1.5% causal; head dim 128 +1.5 to +2.5% but at S = 1k causal
 * (within the run's noise of about 1.5%). Tried and dropped in the same run: P in two
 * register sets per key-tile parity at head dim 64, so the next P's conversion would not
 * write registers the P V product in flight reads; ptxas still placed that product's wait
 * ahead of the softmax (bench/hopper_sass.sh), the variant spilled 12 - 20 bytes and ran
 * 1-5% slower. */
#ifndef KILN_HOPPER_TREE
#define KILN_HOPPER_TREE 1
#endif

/* Per head dim d, what the consumers take turns at
 * (kernels/attention_hopper.cu, KILN_HOPPER_PINGPONG): 0, issuing their matrix products; 1,
 * the exponentials of a tile's softmax, which the two consumer warps of each scheduler
 * otherwise compete for on its one MUFU unit (at head dim 64, 66 exponentials a warp and tile
 * keep it busy about as long as the tile's tensor work). Measured on an H200
 * (bench/hopper_ab.sh, texp and texp64 against the defaults before, same run,
 * bench/results/hopper-ab_texp_*): head dim 128 +2.6 to +3.3% at S = 4k and 16k (causal and
 * not), within noise at 1k; head dim 64 in 192-key tiles (a variant since replaced) +1.6 to
 * +2.6% at S >= 4k without a mask, in 128-key tiles 15% slower without a mask at 1k and
 * 17-19% slower causal. */
/* Head dim 256 takes them too: against turns at issuing the products (tmma beside staged,
 * two passes each on an H100, bench/results/hopper-ab_d256-turns_*) 571.5 / 573.1 against
 * 568.3 / 560.8 TFLOP/s at S = 1k, 702.6 / 661.3 against 629.4 / 630.9 at 4k, 721.8 / 722.5
 * against 657.7 / 657.8 at 16k, causal +1 .. +10%. */
#ifndef KILN_HOPPER_TURN_EXP
#define KILN_HOPPER_TURN_EXP(d) ((d) >= 128)
#endif

/* Where the consumers take turns at issuing their products (head dim 64), an item's first S
 * product and last P V product take turns as the key loop's do. Issuing those two without
 * waiting for the turn (every consumer still passing as many turns as it takes) ran head dim
 * 64 S = 1k 407.1 against 410.4 TFLOP/s, causal 300.2 against 310.4, 4k and 16k within
 * -1.1 .. +0.9% on an H100 (bench/hopper_ab.sh at b2c3e23, edge0 beside staged,
 * bench/results/hopper-ab_edge0_*); not taken. */

/* Per head dim d, 1: under the causal mask the P V product of an item's last key tile
 * leaves out the k-steps of 16 keys past the last key any of the consumer's 64 rows sees
 * (their weights are all 0): on a diagonal tile of 128 keys, the consumer of a block's first
 * 64 rows runs half of it. The steps are predicated, not branched around (kernels/hopper.h,
 * KILN_WGMMA_IF). Predicating every tile's product instead (the first try) ran head dim 64
 * causal S = 1k +2.4% but head dim 128 causal 4-10% slower and 64 at 16k 2.6% slower on an
 * H100 (bench/hopper_ab.sh, skip0 beside it, bench/results/hopper-ab_skippv_*, at 8965b59).
 * In the last tile only, against skip0 in one run on an H100 (bench/results/hopper-ab_lean_*):
 * head dim 64 causal S = 1k 303.9 against 296.9 TFLOP/s, 4k 433.9 against 417.2 (the long
 * variant), 16k 485.2 against 492.0; head dim 128 causal +0.6 .. +1.3%. */
#ifndef KILN_HOPPER_SKIP_PV
#define KILN_HOPPER_SKIP_PV(d) 1
#endif
/* Under the causal mask, a tile's softmax leaving out the exponentials of the groups of 8
 * keys past the last one any row of the warp sees (their weights are 0), by a warp-uniform
 * branch per group on the tiles the mask reaches (on a diagonal tile about half of them),
 * measured on an H100 against the kernel without it (bench/hopper_ab.sh, three passes each
 * in one run; the change is bench/results/hopper-ab_tcsum-skipexp_*_patch.diff, the run
 * beside it), means of the passes: head dim 64 causal S = 1k 282.9 against 298.9 TFLOP/s
 * (-5.4%), 4k 386.8 against 407.3 (-5.0%), head dim 128 causal 1k 384.0 against 416.9
 * (-7.9%): the branches cost more than the exponentials they save. Taken out. */
/* That product in half a tile or all of it by a branch instead (2 injected warpgroup arrives
 * instead of 9, no spill) ran within the run's noise of the predicated steps on an H100
 * (bench/hopper_ab.sh at e0bfa27, skiphalf beside staged,
 * bench/results/hopper-ab_wstore-skiphalf_*): head dim 64 causal S = 1k / 4k / 16k 302.7 /
 * 412.8 / 488.7 against 300.6 / 412.1 / 479.1 TFLOP/s, head dim 128 causal 413.6 / 557.9 /
 * 608.5 against 420.3 / 559.0 / 603.1; the option was taken out. */

/* Per head dim d, 1: a block's staged output (unsplit calls) goes out through the tensor
 * copy engine, one store of each consumer's 64 rows issued by one of its threads (the
 * output's tensor map is the kernel's fourth); 0: the consumers' threads copy the staged
 * rows to global memory in 16-byte pieces, each with its own address and bounds check.
 * Measured on an H200 (bench/hopper_ab.sh, tstore0 against the defaults, same run,
 * bench/results/hopper-ab_tstore_*): head dim 128 +2.0 to +5.4% at S = 1k, +0.8 to +2.2%
 * at 4k and 16k but 16k without a mask (-0.6%); head dim 64 within -2.2% .. +1.1% in tiles
 * of 128 keys and 18% slower in 192-key tiles (S >= 4k, no mask), so not there. */
#ifndef KILN_HOPPER_TMA_STORE
#define KILN_HOPPER_TMA_STORE(d) ((d) == 128)
#endif

/* Each consumer warp storing the 16 rows it staged itself through the copy engine (its
 * first lane issuing the store and waiting for the previous one's read: no barrier across
 * the consumer's 128 threads, two per item here), at every head dim, measured on an H100
 * against the defaults (bench/hopper_ab.sh at e0bfa27, wstore beside staged,
 * bench/results/hopper-ab_wstore-skiphalf_*): -2.0 .. +1.1% per suite-2 shape (head dim 64
 * S = 1k 405.2 against 401.3 TFLOP/s, causal 300.0 against 300.6): the output's barriers are
 * not what an item's boundary costs. Taken out again. Nor the proxy fence after the
 * consumers copy out a staging tile of the block's own (which no copy engine writes): left
 * out, the suite-2 shapes moved by -2.6 .. +2.7% on an H100 (nofence beside staged, three
 * passes, bench/results/hopper-ab_nofence_*); it stays. A store warp in the producer's
 * warpgroup taking the consumers' staged rows instead made ptxas spill 40-90 bytes in every
 * variant (any second path out of the producer's branch did) at 24 producer registers; at
 * 40 (consumers 232) it built without a spill: warp 1 + c of the producer's warpgroup
 * issued consumer c's copy-engine stores after an mbarrier, and the consumer went on to its
 * next item. Against the defaults on an H100 (ALTS="staged sw sw128", the store warps at
 * every head dim / at 128 only; patch and run in bench/results/hopper-ab_store-warp_*):
 * head dim 64 S = 1k 386.8 / 380.4 TFLOP/s against 392.1, causal 284.2 / 284.3 against
 * 288.6, head dim 128 1k 527.1 / 526.2 against 543.5; slower or level at 11 of 12 shapes
 * (-3.2 .. +0.8%). Not kept (not profiled; the consumers' 232 registers against 240 are
 * one difference besides the stores). */

/* Nanoseconds the producer sleeps between polls of a barrier it waits on (0: it polls
 * without a pause). Polling without one, its retries were about 9% of the instructions a
 * head-dim-64 causal block issued at S = 1k, all on the scheduler it shares with two
 * consumer warps (Nsight Compute, bench/ncu_run.sh); yet 32 ns between polls measured no
 * faster on an H200 (bench/hopper_ab.sh, nosleep: within -2.8% .. +2.9% per suite-2 shape,
 * 0 ahead at 9 of 12; bench/results/hopper-ab_item-diet_*), so the default stays 0. */
#ifndef KILN_HOPPER_PRODUCER_SLEEP
#define KILN_HOPPER_PRODUCER_SLEEP 0
#endif
/* Suspend-time hints in nanoseconds (kiln_mbar_wait_hint; 0: none, the waits above) for
 * the producer's waits on empty slots and for the consumers' waits on full ones. With a
 * hint the waiting warp is suspended until the phase completes instead of retrying every
 * few dozen cycles; still no faster: against none on an H100 (bench/hopper_ab.sh, ALTS=
 * "staged hint hintall", 1 ms, bench/results/hopper-ab_wait-hint_*), producer only /
 * both: head dim 64 S = 1k causal 283.7 / 282.9 TFLOP/s against 298.3 (-5%), head dim
 * 128 1k causal 415.1 / 410.8 against 399.6 (+3-4%), every other suite-2 shape within
 * -2.5 .. +2.2%. Off by default, as the sleep above. */
#ifndef KILN_HOPPER_PRODUCER_HINT
#define KILN_HOPPER_PRODUCER_HINT 0
#endif
#ifndef KILN_HOPPER_CONSUMER_HINT
#define KILN_HOPPER_CONSUMER_HINT 0
#endif

/* Per head dim d, how many of every 8 of a tile's softmax exponentials are computed on the
 * FMA and integer pipes (kernels/hopper.h, kiln_hp_exp2_fma: ten instructions against one
 * MUFU op) instead of the MUFU unit, which at head dim 64 has as much work per tile as the
 * tensor cores (64 exponentials a thread, 16 a clock per SM) and held a quarter of the
 * key loop's stall samples at S = 1k (bench/results/ncu_*f9c48c1*). 0: all on MUFU. 2 of 8
 * at head dim 64 ran slower at every head-dim-64 suite-2 shape on an H100 (bench/hopper_ab.sh,
 * fexp2 beside staged, bench/results/hopper-ab_fexp2_*): S = 1k 371.5 against 386.7
 * TFLOP/s, causal 274.6 against 296.5, 4k and 16k 8-11% slower; so the exponentials' unit
 * is not what those shapes wait for, and the default stays 0. */
#ifndef KILN_HOPPER_FMA_EXP
#define KILN_HOPPER_FMA_EXP(d) 0
#endif

/* Registers per thread of the producer warpgroup and of each of the nc consumer warpgroups
 * after setmaxnreg (multiples of 8; 128 x producer + 128 nc x consumer at most the block's
 * launch allocation, 64512 for two consumers and 65536 for three: kernels/attention_hopper.cu
 * asserts it). */
#ifndef KILN_HOPPER_REGS_LOAD
#define KILN_HOPPER_REGS_LOAD(d, m) 24
#endif
#ifndef KILN_HOPPER_REGS_MMA
#define KILN_HOPPER_REGS_MMA(d, m, nc) ((nc) == 3 ? 160 : 240)
#endif

/* Each row's sum of weights from the tensor cores, P times a 16 x 8 tile of ones issued
 * with each P V product (eight m64n8k16 products a tile, four accumulators rescaled with O)
 * instead of 64 additions a thread and tile in the softmax and the quad's shuffles at the
 * output, measured in the same run (same patch): head dim 64 S = 1k 382.6 against 409.7
 * TFLOP/s (-6.6%), causal -0.7%, 4k -1.4% and -0.8% causal, head dim 128 1k -3.1% and
 * -4.7% causal. Two builds of the same kernel differed by up to 4% in that run, yet the
 * additions are not what the key loop waits for: the eight more products cost more. Taken
 * out. */

/* Dynamic shared memory of a block of head dim d, mask m and long flag l: the Q tile, the
 * K and V rings, the output tile where it has its own, 1024 bytes of alignment slack, and
 * 512 for the barriers and each consumer warp's item. */
#define KILN_HOPPER_SMEM_BYTES(d, m, l)                                                     \
    ((KILN_HOPPER_BLOCK_Q(d, m, l) * (1 + KILN_HOPPER_O_OWN(d, m)) +                     \
      2 * KILN_HOPPER_STAGES(d, m) * KILN_HOPPER_BLOCK_K(d, m)) * (d) * 2 + 1024 + 512)

#endif
