/* See shim.h. Compiled with the DPDK cflags (which force-include rte_config.h). */
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "shim.h"

int rust_rte_errno(void) { return rte_errno; }

void rust_rte_errno_set(int value) { rte_errno = value; }

void *rust_rte_pktmbuf_mtod(const struct rte_mbuf *m) { return rte_pktmbuf_mtod(m, void *); }

uint16_t rust_rte_pktmbuf_data_len(const struct rte_mbuf *m) { return rte_pktmbuf_data_len(m); }

uint32_t rust_rte_pktmbuf_pkt_len(const struct rte_mbuf *m) { return rte_pktmbuf_pkt_len(m); }
