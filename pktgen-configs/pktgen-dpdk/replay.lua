-- Replays the pcap loaded on the transmit port (pktgen -s 0:pcaps/<scenario>.pcap) at line
-- rate towards the router under test and reports what came back on the receive port.
--
--   pktgen -l 0-4 -n 4 -a <tx-nic> -a <rx-nic> -- -P -m "[1:2].0,[3:4].1" \
--       -s 0:pktgen-configs/pcaps/mixed.pcap -f pktgen-configs/pktgen-dpdk/replay.lua
--
-- Tunables (edit here or set the globals before loading with `lua "..."`).
TX_PORT = TX_PORT or "0"          -- port replaying the capture into the router
RX_PORT = RX_PORT or "1"          -- port receiving what the router forwards
RATE_PERCENT = RATE_PERCENT or 100 -- share of line rate
DURATION_MS = DURATION_MS or 30000 -- how long to send
SAMPLE_MS = SAMPLE_MS or 5000      -- how often to print rates
WARMUP_MS = WARMUP_MS or 2000      -- let links and ARP/NDP settle first

package.path = package.path .. ";?.lua;test/?.lua;app/?.lua;"
require "Pktgen"

local function port_counter(port, field)
    local stats = pktgen.portStats(port, "port")
    local row = stats[tonumber(port)]
    if row == nil then
        return 0
    end
    return row[field] or 0
end

local function rates(port)
    local r = pktgen.portStats(port, "rate")
    return r[tonumber(port)] or {}
end

pktgen.screen("off")
pktgen.clr()
pktgen.set(TX_PORT, "count", 0)   -- 0: replay the capture until stopped
pktgen.set(TX_PORT, "rate", RATE_PERCENT)
pktgen.pcap(TX_PORT, "on")        -- send the loaded capture, not the single-packet template
pktgen.delay(WARMUP_MS)

printf("replaying on port %s at %d%% of line rate for %d ms\n", TX_PORT, RATE_PERCENT, DURATION_MS)
pktgen.start(TX_PORT)
local elapsed = 0
while elapsed < DURATION_MS do
    pktgen.delay(SAMPLE_MS)
    elapsed = elapsed + SAMPLE_MS
    local tx, rx = rates(TX_PORT), rates(RX_PORT)
    printf("%6d ms: tx %d pkt/s %d Mbit/s, rx %d pkt/s %d Mbit/s\n", elapsed,
        tx["pkts_tx"] or 0, tx["mbits_tx"] or 0, rx["pkts_rx"] or 0, rx["mbits_rx"] or 0)
end
pktgen.stop(TX_PORT)
pktgen.delay(1000)  -- let the router drain its queues

local sent = port_counter(TX_PORT, "opackets")
local received = port_counter(RX_PORT, "ipackets")
local ratio = 0
if sent > 0 then
    ratio = received / sent
end
printf("sent %d, received %d (%.4f of sent)\n", sent, received, ratio)
