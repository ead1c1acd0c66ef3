/* hsad_fusion.h - kernel graphs recorded once and launched as one AQL submission per queue.
 *
 * A graph (hsad_graph_t) records nodes - kernel dispatches (kernel + launch) and barriers -
 * each on a lane (0..HSAD_GRAPH_MAX_LANES-1), with explicit dependencies on earlier nodes. In
 * capture mode (HSAD_GRAPH_CAPTURE) every node also depends on the previous node of its lane
 * (stream order); a cross-lane wait is an explicit dependency on a node of another lane.
 *
 * hsad_graph_instantiate maps lanes to queues (several lanes may share a queue; queues may be
 * on several devices), runs every check of hsad_kernel_dispatch once per node, orders the
 * nodes topologically (level by level, lower node index first; a cycle is HSAD_ERR_GRAPH,
 * "cycle: a -> b -> a") and precomputes every packet body and kernarg image. Edges are
 * encoded with the least device work (epoch-ordered design):
 *   - same queue: a node gets the BARRIER bit only when it depends on a node of its queue
 *     whose completion is not already implied by ring order. A packet with the BARRIER bit does
 *     not launch before every earlier packet of its queue completed, and packets launch in
 *     ring order, so a dependency placed before the queue's last BARRIER packet is implied.
 *     Independent nodes carry no BARRIER bit. Fan-in from the same queue therefore costs no
 *     packet at all (no per-node signals, nothing to reset between launches); the price is
 *     that such a node also waits for independent nodes placed between (minimised by the
 *     level order).
 *   - other queue: a node with a consumer on another queue is followed by an epoch point on
 *     its queue (a packet with the BARRIER bit and the queue's epoch signal as completion
 *     signal: the node itself when it already has the BARRIER bit, else a barrier-AND), so one
 *     run decrements the epoch signal several times; the consumer's queue waits for exactly
 *     that point with one AMD barrier-value packet (BARRIER bit clear) placed before the
 *     consumer (epoch signal < HSAD_EPOCH_BASE - k + 1, hsad_completion_signal's rule), one per
 *     producer point not already implied by an earlier wait on the same queue. Every DAG that
 *     is acyclic at node level fuses, whatever direction its cross-queue edges run (a fork to a
 *     side queue and a join back included): every wait goes to a point placed earlier in the
 *     topological order, so no two runs wait on each other. A queue fault stores 0 into its
 *     epoch signal, so such waiters are released instead of hanging.
 *   - one completion per queue: its last packet is an epoch point (a barrier-AND follows when
 *     the last node cannot carry it). On a profiling queue kernel packets carry their slot's
 *     timestamp signal (device times for hsad_monitor.h records) and never the epoch.
 *
 * Stream order (as hipGraphLaunch and cuGraphLaunch on their stream): a launch is ordered
 * after everything submitted earlier on each queue the exec uses, its own previous launches
 * included, and before everything submitted later with the BARRIER bit (the default of
 * hsad_kernel_dispatch): the first packet of each queue's run has the BARRIER bit, so the run
 * starts only when every earlier packet of that queue completed (HSA 1.2 system architecture
 * 2.9: a packet with the BARRIER bit launches after all preceding packets completed). It costs
 * no packet. An exec on several queues also orders each launch after its own previous launch
 * as a whole: each queue holding a root node starts its run with one barrier-value packet per
 * other queue of the exec, on that queue's previous run (a node of launch i + 1 must not
 * overwrite what a node of launch i on another queue still reads; one packet per pair, from
 * the second launch on). HSAD_GRAPH_UNORDERED drops it for callers who order by other means (the roots of
 * the run may then overlap the queue's earlier work), except where the first packet is an
 * epoch point (an epoch packet always has the BARRIER bit). Work on queues the exec does not use is
 * ordered with launch dependencies (hsad_graph_launch_after).
 *
 * Kernarg segments are prepublished: instantiate writes each kernel node's segment into
 * kernarg memory the exec owns (ROCr's kernarg pool of the queue's device; two versions per
 * node), and the node's packet body points at the version in use, so a launch copies no
 * kernargs. An update writes the version in use when every run of the exec on the node's queue
 * completed, else the other version once the run that last read it completed (the body then
 * points at it), else the node goes into ring-copy mode (each launch copies its segment into
 * the ring slot's kernarg block, hsad_queue.h step 4) until both versions are free again:
 * packets already launched never see an update.
 *
 * hsad_graph_launch reserves every queue's run first (the epoch numbers of the points are then
 * known), then per queue, last packet to first, writes each precomputed 64-byte body (header
 * INVALID; launch-time fields: a barrier-value's threshold, a profiled kernel's timestamp
 * signal, a ring-copy segment) and publishes its header, so the first packet becomes valid
 * last, and rings the queue's doorbell once with its last packet id. Cost (callgrind, hsad
 * bench graph): about 22 instructions per kernel node on one queue.
 *
 * NVIDIA queues (issue 22): the same graph instantiates as one CUDA graph launched on the first
 * queue's stream (nvidia/nv_graph.c: kernel, memcpy, memset and empty nodes, the edges as its
 * dependencies; the other queues joined in stream order), updates as
 * cuGraphExecKernelNodeSetParams; everything above about packets, rings, kernarg memory and
 * epoch points is AMD's (hsad_graph_exec_packet / _point answer HSAD_ERR_UNSUPPORTED, the
 * counts 0). A graph's queues are of one vendor. Stream capture works on NVIDIA queues too
 * ("capture" below).
 *
 * Ownership: graphs and execs are owned by the caller. An exec does not reference its graph
 * (destroy the graph any time after instantiate); kernels, queues and the buffers the
 * arguments point to must outlive the exec's launches (the exec holds its kernel nodes'
 * kernels: hsad_program_destroy of their program is HSAD_ERR_IN_USE until the exec is
 * destroyed), and its queues the exec itself:
 * hsad_graph_exec_destroy waits (10 s at most) for the exec's last run on each queue before it
 * frees the kernarg memory those runs read, and leaves a queue's memory allocated if its run
 * did not complete by then (after hsad_graph_exec_set_queue the old queue's memory is kept until
 * destroy and freed then: do not destroy an exec whose packets still run on a queue it was
 * moved away from). Thread safety:
 * a graph or an exec is
 * used by one thread at a time (launch and update of one exec are not concurrent); distinct
 * execs may be used concurrently, also on shared queues.
 */
#ifndef HSAD_FUSION_H
#define HSAD_FUSION_H

#include "hsa-dispatch/hsad.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  HSAD_GRAPH_MAX_LANES = 64,
  HSAD_GRAPH_NAME_MAX = 32,      /* bytes of a node name, NUL included */
  HSAD_GRAPH_CAPTURE = 1u << 0,  /* hsad_graph_create flag: order nodes within a lane */
};

typedef struct hsad_graph hsad_graph_t;
typedef struct hsad_graph_exec hsad_graph_exec_t;

/* Creates an empty graph. flags: HSAD_GRAPH_CAPTURE or 0. Errors: HSAD_ERR_INVALID_ARGUMENT
 * (NULL, unknown flag), HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_graph_create(uint32_t flags, hsad_graph_t **out_graph);
void hsad_graph_destroy(hsad_graph_t *graph);

/* Records a kernel dispatch node on `lane`, depending on nodes deps[0..dep_count) (ids
 * returned earlier). name (NULL: "node<id>") is truncated to HSAD_GRAPH_NAME_MAX - 1 bytes.
 * launch and its arguments are copied (the values of HSAD_KARG_BYTES too); flags other than
 * HSAD_LAUNCH_FENCE_AGENT are ignored (the graph decides the BARRIER bit). Checks against the
 * queue happen at instantiate. *out_node = the node id (0, 1, ... in recording order).
 * Node names are unique within a graph (as stored: truncated, or the default), so that
 * messages (a cycle, a failed node) name one node; the check compares with every recorded node.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL graph/kernel/launch, lane >= HSAD_GRAPH_MAX_LANES,
 * a dependency id not yet recorded: the message names it; a name already taken: "node name 'A'
 * is the name of node 0; node names are unique"), HSAD_ERR_OUT_OF_MEMORY; on error nothing is
 * recorded. */
hsad_status_t hsad_graph_add_kernel(hsad_graph_t *graph, const char *name, uint32_t lane,
                                    const hsad_device_kernel_t *kernel, const hsad_launch_t *launch,
                                    const uint32_t *deps, uint32_t dep_count, uint32_t *out_node);

/* Records a barrier node (a join: nodes depending on it wait for all of deps). Errors as
 * hsad_graph_add_kernel. */
hsad_status_t hsad_graph_add_barrier(hsad_graph_t *graph, const char *name, uint32_t lane,
                                     const uint32_t *deps, uint32_t dep_count,
                                     uint32_t *out_node);

/* Copy and fill nodes. They are dispatches of the library's own kernels (hsad_graph_copy,
 * hsad_graph_fill: OpenCL C compiled with comgr for the device's processor on first use, about
 * 0.2 s once per processor per process, loaded once per exec and device) on the node's queue,
 * 16 bytes per work-item in workgroups of up to 256, so they fuse like kernel nodes: one
 * reservation and one doorbell per queue, edges as for kernels, no HSA signal per node and no
 * ROCr call per launch. The alternative, ROCr's copy engine (hsa_amd_memory_async_copy)
 * bridged by barrier packets, costs a signal, a ROCr call and a barrier-AND per node and launch
 * (hsad_memcpy_async's path), and ROCr runs device-to-device copies as blit kernels anyway;
 * the price of kernels is that a copy uses the queue's compute units instead of an SDMA
 * engine (for large host<->device transfers on real hardware, hsad_memcpy_async with a launch
 * dependency may be faster). dst and src must be reachable by the device of the node's queue
 * (device memory, pinned or registered host memory, hsad_buffer_alloc memory): pageable memory
 * faults the queue (kfd-emu's strict access mode reports it as on a dGPU with XNACK off).
 * Copies have memcpy semantics (no overlap). The operands are copied into the graph.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL dst/src, size or count 0, overlapping ranges, width
 * not 1, 2 or 4, a pattern wider than width, the errors of hsad_graph_add_kernel), HSAD_ERR_RANGE
 * (more than 16 x (2^32 - 1) bytes: 2^32 - 1 work-items); at instantiate the kernels' compile
 * or load errors ("node NAME: graph copy/fill kernels for gfx90a: ..."). */

/* Records a node copying `size` bytes from src to dst. */
hsad_status_t hsad_graph_add_copy(hsad_graph_t *graph, const char *name, uint32_t lane,
                                  void *dst, const void *src, size_t size, const uint32_t *deps,
                                  uint32_t dep_count, uint32_t *out_node);

/* Records a node filling `count` elements of `width` bytes (1, 2 or 4) at dst with the low
 * `width` bytes of pattern (little-endian, as hsad_memset). */
hsad_status_t hsad_graph_add_fill(hsad_graph_t *graph, const char *name, uint32_t lane,
                                  void *dst, uint32_t pattern, uint32_t width, size_t count,
                                  const uint32_t *deps, uint32_t dep_count, uint32_t *out_node);

/* Adds an edge: node `to` waits for node `from` (any two recorded nodes; a cycle is reported
 * by instantiate). Errors: HSAD_ERR_INVALID_ARGUMENT (unknown node), HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_graph_add_edge(hsad_graph_t *graph, uint32_t from, uint32_t to);

/* Instantiates the graph: lane i runs on lane_queues[i] (lane_count entries; every lane used
 * by a node needs a non-NULL queue). Errors: HSAD_ERR_INVALID_ARGUMENT ("NULL graph", "NULL
 * lane_queues", "NULL out_exec", "the graph has no nodes (nothing to run)", a used lane
 * without a queue), HSAD_ERR_GRAPH ("cycle: a -> b -> a"), the checks of
 * hsad_kernel_dispatch prefixed with "node NAME: ", HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_graph_instantiate(const hsad_graph_t *graph, hsad_queue_t *const *lane_queues,
                                     uint32_t lane_count, hsad_graph_exec_t **out_exec);

/* Distinct queues of the exec (the length of hsad_graph_launch's completion array) and the
 * packets one launch writes on queue i (in the exec's queue order: first use by a node in
 * topological order; launch dependencies add theirs ahead of them). */
uint32_t hsad_graph_exec_queue_count(const hsad_graph_exec_t *exec);
uint32_t hsad_graph_exec_packet_count(const hsad_graph_exec_t *exec, uint32_t queue_index);
hsad_queue_t *hsad_graph_exec_queue(const hsad_graph_exec_t *exec, uint32_t queue_index);
/* The epoch points of queue i (epoch packets per launch: one per node with a consumer on
 * another queue, plus the run's last packet when no such node is last). */
uint32_t hsad_graph_exec_point_count(const hsad_graph_exec_t *exec, uint32_t queue_index);
/* *out_packet_index = the packet index of epoch point `point` of queue `queue_index` (it
 * carries the queue's epoch signal at launch). Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, index
 * out of range). */
hsad_status_t hsad_graph_exec_point(const hsad_graph_exec_t *exec, uint32_t queue_index,
                                    uint32_t point, uint32_t *out_packet_index);
/* The precomputed packet `packet_index` of queue `queue_index` (64 bytes, header included as
 * it will be published with stream order: packet 0 has the BARRIER bit; the kernarg address
 * of the prepublished segment in use and the epoch completion signal as written; launch-time
 * fields - a barrier-value's value, timestamp signals - as 0) and the node it
 * belongs to (-1: a barrier-value wait, an epoch barrier-AND, or the padding after a kernel
 * whose kernarg segment spans several of the queue's kernarg blocks: barrier-AND packets
 * without the BARRIER bit, hsad_queue.h step 4). Errors: HSAD_ERR_INVALID_ARGUMENT (NULL,
 * index out of range). */
hsad_status_t hsad_graph_exec_packet(const hsad_graph_exec_t *exec, uint32_t queue_index,
                                     uint32_t packet_index, uint8_t out_packet[64],
                                     int32_t *out_node);

/* Why a launch was not fused (hsad_graph_launch's out_reason, hsad_graph_exec_counters). */
typedef enum hsad_graph_rollback {
  HSAD_GRAPH_ROLLBACK_NONE = 0,       /* fused: one submission per queue */
  HSAD_GRAPH_ROLLBACK_REQUESTED,      /* HSAD_GRAPH_SEQUENTIAL */
  HSAD_GRAPH_ROLLBACK_RING_SIZE,      /* a queue needs more packets than its ring holds */
  HSAD_GRAPH_ROLLBACK_RING_FULL,      /* no longer produced (since 0.4 a full ring is waited
                                         for until the deadline, as by every submit call) */
  HSAD_GRAPH_ROLLBACK_QUEUE_CYCLE,    /* no longer produced (cross-queue edges both ways fuse
                                         since 0.4: epoch points per producer); kept so the
                                         values after it do not move */
  HSAD_GRAPH_ROLLBACK_DRIVER,         /* NVIDIA: the driver refused to build or instantiate
                                         the CUDA graph (a copy from pageable memory, queues
                                         on several devices): every launch is sequential;
                                         hsad_graph_exec_rollback_detail says why */
  HSAD_GRAPH_ROLLBACK_COUNT
} hsad_graph_rollback_t;

enum {
  HSAD_GRAPH_NO_ROLLBACK = 1u << 0,   /* launch flag: fail instead of rolling back */
  HSAD_GRAPH_SEQUENTIAL = 1u << 1,    /* launch flag: take the rollback path (comparisons) */
  HSAD_GRAPH_UNORDERED = 1u << 2,     /* launch flag: no stream order (the first packet of
                                         each queue's run without the BARRIER bit) */
};

/* "fused", "ring too small", ...: static string. */
const char *hsad_graph_rollback_name(hsad_graph_rollback_t reason);

/* Why every launch of the exec rolls back whatever the flags (HSAD_GRAPH_ROLLBACK_DRIVER: the
 * CUDA driver's error for the node or the instantiate that failed, e.g. "node C:
 * cuGraphAddMemcpyNode: CUDA_ERROR_INVALID_VALUE (invalid argument)"), or NULL when launches
 * fuse (AMD execs: always NULL). Owned by the exec. */
const char *hsad_graph_exec_rollback_detail(const hsad_graph_exec_t *exec);

/* Launches the exec once, in stream order on each of its queues (see "Stream order" above).
 * out_completions (may be NULL): hsad_graph_exec_queue_count entries,
 * completion i covers the exec's packets on queue i and everything earlier on that queue (wait
 * for all with hsad_completion_wait_all: a fault on any queue is reported by it; device-side
 * waiters on other queues are released, hsad_queue.h "Errors of the queue"). Every queue's
 * sticky error is checked before anything is reserved.
 * When the launch cannot be fused (hsad_graph_rollback_t) it rolls back to sequential
 * submission: every node on its own in topological order as an epoch packet (BARRIER bit),
 * the host waiting for producers on other queues; same results. *out_reason (may be NULL)
 * says which path ran; hsad_graph_exec_counters counts them. flags: HSAD_GRAPH_NO_ROLLBACK
 * (then HSAD_ERR_RESOURCE_EXHAUSTED naming the reason), HSAD_GRAPH_SEQUENTIAL,
 * HSAD_GRAPH_UNORDERED. deadline_ns: until when full rings (and, sequential, producers) are
 * waited for; 0: no waiting.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, unknown flags), a queue's sticky error
 * (QUEUE_ERROR / CLOSED), HSAD_ERR_TIMEOUT (a ring stayed full until the deadline: "graph
 * launch, queue I of N: ..."; runs already reserved on the queues before it are turned into
 * no-op packets (barrier-ANDs; the epoch points keep the epoch), nothing of the graph ran),
 * the rollback errors above.
 * Not concurrent with another launch, update or set_queue of the same exec. */
hsad_status_t hsad_graph_launch(hsad_graph_exec_t *exec, uint32_t flags, uint64_t deadline_ns,
                                hsad_completion_t *out_completions,
                                hsad_graph_rollback_t *out_reason);

/* As hsad_graph_launch, and the launch also waits for deps[0..dep_count) (completions on any
 * queue or device, e.g. another queue's kernel or an hsad_memcpy_async; empty ones are
 * satisfied), on the device, with no host wait: deps collapse to the latest epoch per queue
 * and each queue of the exec that holds a node without dependencies (a root) starts its run
 * with one AMD barrier-value packet per dependency queue (the first of them carries the
 * stream-order BARRIER bit); a dependency on the same queue needs none (stream order implies
 * it; with HSAD_GRAPH_UNORDERED it gets one too). Nodes that are not roots wait for roots, so
 * every node runs after every dependency. Rollback: a barrier (hsad_queue_barrier) on those
 * queues before the sequential submission. Errors: those of hsad_graph_launch,
 * HSAD_ERR_INVALID_ARGUMENT (deps NULL with a count; an epoch never issued on its queue:
 * "dependency I: ..."; more than 16 distinct dependency queues), a dependency queue's sticky
 * error when it faulted before reaching the dependency. */
hsad_status_t hsad_graph_launch_after(hsad_graph_exec_t *exec, uint32_t flags,
                                      const hsad_completion_t *deps, uint32_t dep_count,
                                      uint64_t deadline_ns, hsad_completion_t *out_completions,
                                      hsad_graph_rollback_t *out_reason);

/* Launches per path so far, indexed by hsad_graph_rollback_t (NONE = fused). */
void hsad_graph_exec_counters(const hsad_graph_exec_t *exec,
                              uint64_t out_counts[HSAD_GRAPH_ROLLBACK_COUNT]);

/* Moves the exec's queue `queue_index` to `queue` (same device; e.g. after the old one
 * faulted): every kernel node on it is checked again on the new queue and its kernarg image
 * rebuilt (the hidden queue arguments change), in place. Stream order holds across the move:
 * it first waits (10 s at most) until the exec's last run on the old queue completed (or the
 * queue faulted), so later launches need not wait for a queue the exec no longer uses. On error
 * nothing changed.
 * Errors: HSAD_ERR_TIMEOUT (that run did not complete in 10 s), HSAD_ERR_INVALID_ARGUMENT (NULL, index out of range, another device, a queue the
 * exec already uses at another index, a profiling queue for a queue that was not one or the
 * reverse (where epoch packets go is laid out at instantiate), a node whose kernarg segment would span another number
 * of the new queue's kernarg blocks than the old one's: its padding is laid out at
 * instantiate), the checks of hsad_kernel_dispatch ("node NAME: ").
 * Not concurrent with a launch of the exec. */
hsad_status_t hsad_graph_exec_set_queue(hsad_graph_exec_t *exec, uint32_t queue_index,
                                        hsad_queue_t *queue);

/* Replaces kernel node `node`'s arguments and geometry (same kernel) for later launches,
 * validated as hsad_kernel_dispatch does (hidden arguments follow the new geometry), written as
 * "Kernarg segments are prepublished" above says: allocates nothing; on error the node is
 * unchanged. Packets already launched are unaffected. A launch of the stored one's shape (same
 * geometry, flags, argument tags and sizes, 8-byte pointer slots) writes only the explicit
 * arguments' bytes: with pointers and 4- or 8-byte values, once every earlier launch of the
 * exec on the node's queue completed, about 66 + 18 per argument instructions (121 for 3,
 * callgrind, hsad bench graph); another shape runs every check of hsad_kernel_dispatch again.
 * Not thread-safe against launches or updates of the same exec. Errors:
 * HSAD_ERR_INVALID_ARGUMENT (NULL, unknown node, a node that is not a kernel node: "node NAME
 * is a copy node, not a kernel node"), the checks of hsad_kernel_dispatch prefixed with
 * "node NAME: " (e.g. HSAD_ERR_ARG_SIZE "node F: FILE: kernel 'fill': argument 1 has .size 4,
 * value has 8 bytes"; HSAD_ERR_ARG_KIND "... argument 1 is uint (integer), the value given is
 * f32 (floating-point)": the fast path takes a typed value only with the type the node was
 * checked with, any other goes through the checks). */
hsad_status_t hsad_graph_exec_update(hsad_graph_exec_t *exec, uint32_t node,
                                     const hsad_launch_t *launch);

/* As hsad_graph_exec_update for copy and fill nodes: new operands (checked as by
 * hsad_graph_add_copy / _fill), patched in place for later launches, no allocation. Errors:
 * HSAD_ERR_INVALID_ARGUMENT (NULL exec, unknown node, a node of another kind: "node A is a
 * kernel node, not a copy node"), those of hsad_graph_add_copy / _fill. */
hsad_status_t hsad_graph_exec_update_copy(hsad_graph_exec_t *exec, uint32_t node, void *dst,
                                          const void *src, size_t size);
hsad_status_t hsad_graph_exec_update_fill(hsad_graph_exec_t *exec, uint32_t node, void *dst,
                                          uint32_t pattern, uint32_t width, size_t count);

void hsad_graph_exec_destroy(hsad_graph_exec_t *exec);

/* ---- capture (fusion/capture.c) ---------------------------------------------------------
 *
 * Stream capture, as cudaStreamBeginCapture / hipStreamBeginCapture: between
 * hsad_queue_capture_begin and hsad_queue_capture_end, what is submitted to the queue is
 * recorded into a graph on one lane instead of being written into the ring (nothing reaches
 * the ring: write_dispatch_id does not move; on an NVIDIA queue nothing reaches the CUDA
 * stream: no cuLaunchKernel, the queue's epochs do not move). Instantiate the graph with that
 * lane mapped to the queue (or any other) and launch it as often as needed (on NVIDIA queues
 * as one CUDA graph, nvidia/nv_graph.c). Both vendors, one API (issue 22); what differs on
 * NVIDIA is said at the end of this list.
 *   - hsad_kernel_dispatch records a kernel node: every check of hsad_kernel_dispatch runs at
 *     the call (same codes and messages; on error nothing is recorded); launch and argument
 *     values are copied (hsad_graph_add_kernel; HSAD_LAUNCH_NO_BARRIER is dropped: the graph
 *     decides the BARRIER bit); deadline_ns is unused.
 *   - hsad_queue_barrier records a barrier node that waits for its dependencies: captured
 *     completions of this capture, or of another queue capturing into the same graph (a
 *     cross-lane edge: fork/join across queues, as cudaEventRecord + cudaStreamWaitEvent
 *     during capture); empty completions are satisfied.
 *   - Stream order: each recorded node depends on the node this capture recorded before it
 *     (CUDA capture's rule; the first one on nothing else, except what HSAD_GRAPH_CAPTURE adds
 *     for nodes recorded on the lane earlier). The graph then encodes these edges as it does
 *     any other (BARRIER bits, epoch points across queues; hsad_graph_instantiate).
 *   - The completion a captured call returns stands for its node: {queue: the capturing queue,
 *     epoch: HSAD_CAPTURE_EPOCH_BASE + (capture id << 32) + node, packet_id: node};
 *     *out_packet_id is the node id too. It is only a dependency for hsad_queue_barrier during
 *     capture: it was never issued on the queue, so waiting on it, or a dependency on it
 *     outside a capture, is HSAD_ERR_INVALID_ARGUMENT ("epoch E was never issued on queue Q
 *     ..."), and hsad_completion_done stays false.
 *   - Refused on a capturing queue with HSAD_ERR_INVALID_ARGUMENT, nothing submitted: "WHO:
 *     queue Q is capturing (hsad_queue_capture_begin): a capture records hsad_kernel_dispatch
 *     and hsad_queue_barrier only; end it first (hsad_queue_capture_end)", WHO being
 *     hsad_prepared_dispatch, hsad_queue_dispatch_batch, hsad_queue_flush,
 *     hsad_queue_wait_idle, "hsad_queue_barrier_signals (HSA signals)" (signals or a
 *     decrement), and for hsad_graph_launch(_after) of an exec using the queue
 *     "graph launch, queue I of N: hsad_submit_reserve_epochs" (fused: the exec's queues
 *     before it were reserved and get no-op packets, as on a timeout) or
 *     "hsad_submit_reserve" (sequential).
 *   - Barrier dependencies refused (HSAD_ERR_INVALID_ARGUMENT, nothing recorded): on work
 *     outside the capture (a real epoch): "hsad_queue_barrier: queue Q is capturing:
 *     dependency I is work submitted outside the capture (epoch E of queue R), which a graph
 *     cannot wait for: wait for it before hsad_queue_capture_begin, or pass it to
 *     hsad_graph_launch_after"; on a node of a capture that ended: "... dependency I is node
 *     N of a capture on queue R that has ended"; of a capture into another graph: "...
 *     dependency I is node N of another graph (captured on queue R); a barrier joins captures
 *     into the same graph only".
 *   - Not captured: copies (memory/: hsad_memcpy_async and friends do not go through the
 *     capturing queue, so they run at once and are not refused; record copies as graph nodes
 *     directly),
 *     hsad_launch_prepare (it submits nothing). The queue's sticky error is checked first by
 *     every call, as without capture; hsad_queue_error does not report a capture.
 *   - NVIDIA queues (fusion/capture.c through the backend's table, backend.h "stream
 *     capture"): the same rules, codes and messages, Q being the queue's number in the
 *     backend's messages (its process-unique id). The checks of a captured dispatch are the
 *     uncaptured call's (nv_launch_prepare). Refused while capturing, with the wording above:
 *     hsad_queue_flush, hsad_queue_wait_idle, hsad_queue_dispatch_batch, and
 *     hsad_graph_launch(_after) of an exec using the queue, WHO "hsad_graph_launch: queue I of
 *     N" (fused or HSAD_GRAPH_SEQUENTIAL: checked before anything is enqueued on any of the
 *     exec's queues). hsad_prepared_dispatch and hsad_queue_barrier_signals with HSA signals
 *     are AMD only on an NVIDIA queue anyway (HSAD_ERR_UNSUPPORTED, capturing or not). A
 *     captured dispatch on a monitored queue leaves no monitor record (it does not run; the
 *     graph's launches record their nodes). A captured completion waited on or used as a
 *     dependency outside the capture: "... epoch E was never issued on queue Q ...", as on
 *     AMD. A graph launched on another queue that covers this one (its pending join) is
 *     waited for by the first uncaptured submit after end.
 * Cost on the uncaptured path: no added test. The queue's sticky error and its capture flag
 * share one 64-bit word, so hsad_kernel_dispatch and hsad_prepared_dispatch test both with the
 * single load and branch they had for the error (callgrind, hsad bench dispatch, gcc 12 -O2:
 * hsad_kernel_dispatch 151 -> 153 instructions per submit, one spill and reload the 64-bit
 * value moved in register allocation; hsad_prepared_dispatch 106 -> 106). NVIDIA: the same
 * word (backend.h: HSAD_GATE_CAPTURE beside HSAD_GATE_BACKEND) replaces the dispatch's
 * sticky-error load, so the error and the capture are one 64-bit load, compare and branch
 * (one movabs more, no added branch: callgrind against the mock, hsad-bench-nvidia dispatch,
 * -O2, instructions per hsad_kernel_dispatch over 8,000 calls: 132.5 -> 133.5 in the
 * make BACKENDS=nvidia build, 132.5 -> 134.5 in the build with AMD, a register moved); the
 * barrier and a graph launch test the word in place of the error likewise.
 * Thread safety: capture is per queue, not per thread (cudaStreamCaptureModeGlobal's scope
 * without its refusal of unsafe calls): submits from any thread to a capturing queue are
 * recorded, serialised by one process-wide lock (cold). Begin and end may be called from any
 * thread; a submit racing with end is either recorded or submitted. While a queue captures
 * into a graph, the graph must not be used otherwise (add, instantiate, destroy). */

/* Captured completions have epochs from here up (above every epoch a queue issues: a queue's
 * epoch signal starts at HSAD_EPOCH_BASE and counts down). */
#define HSAD_CAPTURE_EPOCH_BASE ((uint64_t)1 << 62)
/* Capture ids run 1 .. HSAD_CAPTURE_ID_MAX (process-wide, then wrap to 1). */
#define HSAD_CAPTURE_ID_MAX ((1u << 30) - 1)

/* Starts capturing `queue`'s submits into `graph` on `lane` (see "capture" above). The graph
 * stays the caller's (created with hsad_graph_create, flags 0 or HSAD_GRAPH_CAPTURE; it may
 * hold nodes already); several queues may capture into one graph, each on its own lane.
 * Errors (HSAD_ERR_INVALID_ARGUMENT unless said): "hsad_queue_capture_begin: NULL queue or
 * graph"; "hsad_queue_capture_begin: lane L not below 64"; "hsad_queue_capture_begin: queue Q
 * is already capturing (lane L); end that capture first (hsad_queue_capture_end)";
 * "hsad_queue_capture_begin: lane L of the graph is being captured on queue Q; give each
 * queue its own lane"; a shared queue (hsad_device_queue: its other users' submits would be
 * captured): "hsad_queue_capture_begin: queue Q is a shared queue of device D
 * (hsad_device_queue): its other users' submits would be captured; capture on a queue of your
 * own (hsad_queue_create)"; the queue's sticky error (QUEUE_ERROR / CLOSED, its message after
 * "hsad_queue_capture_begin: ");
 * HSAD_ERR_OUT_OF_MEMORY. AMD and NVIDIA queues alike (the same messages). Thread-safe. */
hsad_status_t hsad_queue_capture_begin(hsad_queue_t *queue, hsad_graph_t *graph, uint32_t lane);

/* Ends the queue's capture: later submits write packets again. *out_graph (may be NULL) = the
 * graph given to begin (still the caller's; nothing is copied). Ending a queue that faulted
 * meanwhile succeeds (the graph holds what was recorded). End every capture before destroying
 * its queue (hsad_queue_destroy does not end it; its state would leak). Errors
 * (HSAD_ERR_INVALID_ARGUMENT): "hsad_queue_capture_end: NULL queue",
 * "hsad_queue_capture_end: queue Q is not capturing". Thread-safe. */
hsad_status_t hsad_queue_capture_end(hsad_queue_t *queue, hsad_graph_t **out_graph);

/* True while the queue captures (false for NULL). Thread-safe. */
bool hsad_queue_capturing(const hsad_queue_t *queue);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_FUSION_H */
