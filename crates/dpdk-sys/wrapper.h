/* Headers bindgen parses for dpdk-sys. Keep this list short: every header pulls in more types. */
#include <rte_config.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_launch.h>
#include <rte_per_lcore.h>
#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ether.h>
#include <rte_ethdev.h>

/* Hand-written helpers for what bindgen cannot see (macros, thread-local variables); see shim.c. */
#include "shim.h"
