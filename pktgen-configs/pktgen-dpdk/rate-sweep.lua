-- Steps the replay rate of the loaded capture up from 10 % to 100 % of line rate and prints,
-- per step, what the router under test forwarded: the knee where received/sent drops below
-- LOSS_LIMIT is the router's zero-loss throughput for that scenario.
--
--   pktgen ... -s 0:pktgen-configs/pcaps/size-192.pcap -f pktgen-configs/pktgen-dpdk/rate-sweep.lua
TX_PORT = TX_PORT or "0"
RX_PORT = RX_PORT or "1"
STEP_MS = STEP_MS or 10000     -- time per rate step
LOSS_LIMIT = LOSS_LIMIT or 0.999
STEPS = STEPS or { 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 }

package.path = package.path .. ";?.lua;test/?.lua;app/?.lua;"
require "Pktgen"

local function counter(port, field)
    local row = pktgen.portStats(port, "port")[tonumber(port)]
    return (row and row[field]) or 0
end

pktgen.screen("off")
pktgen.set(TX_PORT, "count", 0)
pktgen.pcap(TX_PORT, "on")

local knee = nil
for _, rate in ipairs(STEPS) do
    pktgen.clr()
    pktgen.set(TX_PORT, "rate", rate)
    pktgen.start(TX_PORT)
    pktgen.delay(STEP_MS)
    pktgen.stop(TX_PORT)
    pktgen.delay(1000)
    local sent, received = counter(TX_PORT, "opackets"), counter(RX_PORT, "ipackets")
    local ratio = 0
    if sent > 0 then
        ratio = received / sent
    end
    printf("rate %3d%%: sent %d received %d ratio %.5f\n", rate, sent, received, ratio)
    if ratio < LOSS_LIMIT and knee == nil then
        knee = rate
    end
end
if knee then
    printf("loss above %.3f%% from %d%% of line rate\n", (1 - LOSS_LIMIT) * 100, knee)
else
    printf("no loss above %.3f%% up to line rate\n", (1 - LOSS_LIMIT) * 100)
end
