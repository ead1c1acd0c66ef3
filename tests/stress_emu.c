/* stress_emu.c - a plain program (no Criterion, whose process arena does not start under
 * ThreadSanitizer) that drives kfd-emu from several host threads at once through the real
 * ROCr: 4 producers push barrier-AND packets into one shared 64-slot queue while a second GPU's
 * queue gates on them, and queues are created and destroyed meanwhile. Built and run by
 * `make tsan` with -fsanitize=thread and by `make valgrind` under memcheck; exits 0 when every
 * completion arrived. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/rocr_testutil.h"

#define PRODUCERS 4
static int PER_THREAD = 20000; /* STRESS_PACKETS overrides (valgrind runs use fewer) */

static hsa_queue_t *shared_q;
static hsa_signal_t done;

static void *producer(void *arg) {
  (void)arg;
  hsa_barrier_and_packet_t p;
  memset(&p, 0, sizeof p);
  p.header = rt_header(HSA_PACKET_TYPE_BARRIER_AND, true);
  p.completion_signal = done;
  for (int i = 0; i < PER_THREAD; i++) rt_submit(shared_q, &p, true);
  return NULL;
}

static hsa_status_t second_gpu(hsa_agent_t a, void *data) {
  hsa_device_type_t t;
  hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
  if (t == HSA_DEVICE_TYPE_GPU) *(hsa_agent_t *)data = a;
  return HSA_STATUS_SUCCESS;
}

int main(void) {
  const char *n = getenv("STRESS_PACKETS");
  if (n && atoi(n) > 0) PER_THREAD = atoi(n);
  rt_t rt;
  if (rt_open(&rt) != 0 || rt.gpus < 2) {
    fprintf(stderr, "stress_emu: needs ROCr on kfd-emu with KFD_EMU_GPUS=2\n");
    return 1;
  }
  hsa_agent_t gpu1 = rt.gpu;
  hsa_iterate_agents(second_gpu, &gpu1);
  hsa_queue_t *gate = NULL;
  if (hsa_queue_create(rt.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX,
                       &shared_q) ||
      hsa_queue_create(gpu1, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &gate))
    return 1;
  hsa_signal_create(PRODUCERS * PER_THREAD, 0, NULL, &done);
  hsa_signal_t gated;
  hsa_signal_create(1, 0, NULL, &gated);
  hsa_barrier_and_packet_t g;
  memset(&g, 0, sizeof g);
  g.header = rt_header(HSA_PACKET_TYPE_BARRIER_AND, true);
  g.dep_signal[0] = done; /* GPU 1 waits for all of GPU 0's packets */
  g.completion_signal = gated;
  rt_submit(gate, &g, true);
  pthread_t t[PRODUCERS];
  for (int i = 0; i < PRODUCERS; i++) pthread_create(&t[i], NULL, producer, NULL);
  for (int i = 0; i < 20; i++) { /* queue churn on the other GPU meanwhile */
    hsa_queue_t *q;
    if (hsa_queue_create(gpu1, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q) == 0)
      hsa_queue_destroy(q);
  }
  for (int i = 0; i < PRODUCERS; i++) pthread_join(t[i], NULL);
  int ok = rt_wait_zero(done, 60000) && rt_wait_zero(gated, 10000) &&
           hsa_queue_load_read_index_scacquire(shared_q) == PRODUCERS * PER_THREAD;
  printf("stress_emu: %d producers x %d packets: %s\n", PRODUCERS, PER_THREAD,
         ok ? "all completed" : "LOST COMPLETIONS");
  hsa_queue_destroy(gate);
  hsa_queue_destroy(shared_q);
  rt_close(&rt);
  return ok ? 0 : 1;
}
