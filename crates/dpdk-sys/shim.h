/* Hand-written helpers for DPDK macros and per-lcore (thread-local) variables, which bindgen
 * cannot bind directly. Implemented in shim.c and compiled by build.rs. */
#ifndef DPDK_SYS_SHIM_H
#define DPDK_SYS_SHIM_H

#include <stdint.h>

struct rte_mbuf;

/* The calling thread's `rte_errno` (a per-lcore macro around a thread-local variable). */
int rust_rte_errno(void);

/* Sets the calling thread's `rte_errno`. */
void rust_rte_errno_set(int value);

/* `rte_pktmbuf_mtod(m, void *)`: start of the data in the first segment. */
void *rust_rte_pktmbuf_mtod(const struct rte_mbuf *m);

/* `rte_pktmbuf_data_len(m)`: data length of the first segment. */
uint16_t rust_rte_pktmbuf_data_len(const struct rte_mbuf *m);

/* `rte_pktmbuf_pkt_len(m)`: data length of the whole packet (all segments). */
uint32_t rust_rte_pktmbuf_pkt_len(const struct rte_mbuf *m);

#endif
