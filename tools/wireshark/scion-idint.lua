-- SCION + ID-INT dissector for Wireshark / tshark 4.0 (Lua 5.2).
--
-- Decodes the SCION common and address headers, the Empty, SCION, OneHop and EPIC-HP paths,
-- hop-by-hop and end-to-end extension headers (Pad1/PadN, SPAO, ID-INT main option and
-- telemetry stack entries), SCION/UDP, SCMP (with the quoted packet) and hands BFD/SCION to
-- Wireshark's BFD dissector. Wire formats: docs/spec/scion-dp.md and docs/spec/idint.md of
-- this repository; the reference decoder is crates/idint-wire. Field names are listed in
-- tools/wireshark/README.md and are kept stable (crates/wire-tools/tests/dissector.rs compares
-- them with idint-wire packet by packet).
--
-- Every read is bounds-checked: truncated or inconsistent packets get an expert info of group
-- PI_MALFORMED (scion.malformed) and the dissection stops at the layer at fault; a Lua error
-- would be a bug (it is caught and reported as scion.internal_error).

local scion = Proto("scion", "SCION")

-------------------------------------------------------------------------------------------
-- Value strings
-------------------------------------------------------------------------------------------

local vs_next_hdr = {
    [6] = "TCP/SCION", [17] = "UDP/SCION", [200] = "Hop-by-hop options",
    [201] = "End-to-end options", [202] = "SCMP", [203] = "BFD/SCION",
    [253] = "Experimental 253", [254] = "Experimental 254", [255] = "Reserved",
}
local vs_path_type = { [0] = "Empty", [1] = "SCION", [2] = "OneHop", [3] = "EPIC-HP", [4] = "COLIBRI" }
local vs_addr_type = { [0] = "IP", [1] = "SVC", [2] = "Reserved", [3] = "Reserved" }
local vs_svc = {
    [0x0001] = "DS", [0x0002] = "CS", [0x0010] = "Wildcard", [0xffff] = "None",
    [0x8001] = "DS (multicast)", [0x8002] = "CS (multicast)", [0x8010] = "Wildcard (multicast)",
}
local vs_hbh_opt = { [0] = "Pad1", [1] = "PadN", [253] = "ID-INT main option", [254] = "ID-INT stack entry" }
local vs_e2e_opt = { [0] = "Pad1", [1] = "PadN", [2] = "SPAO", [253] = "Experimental 253", [254] = "Experimental 254" }
local vs_spao_alg = { [0] = "AES-CMAC", [1] = "SHA1-AES-CBC", [253] = "Experimental", [254] = "Experimental", [255] = "Reserved" }
local vs_scmp_type = {
    [1] = "Destination Unreachable", [2] = "Packet Too Big", [4] = "Parameter Problem",
    [5] = "External Interface Down", [6] = "Internal Connectivity Down",
    [128] = "Echo Request", [129] = "Echo Reply", [130] = "Traceroute Request", [131] = "Traceroute Reply",
}
local scmp_codes = {
    [1] = { [0] = "No route to destination", [1] = "Communication administratively denied",
        [2] = "Beyond scope of source address", [3] = "Address unreachable", [4] = "Port unreachable",
        [5] = "Source address failed ingress/egress policy", [6] = "Reject route to destination" },
    [4] = { [0] = "Erroneous header field", [1] = "Unknown NextHdr type", [16] = "Invalid common header",
        [17] = "Unknown SCION version", [18] = "FlowID required", [19] = "Invalid packet size",
        [20] = "Unknown path type", [21] = "Unknown address format", [32] = "Invalid address header",
        [33] = "Invalid source address", [34] = "Invalid destination address", [35] = "Non-local delivery",
        [48] = "Invalid path", [49] = "Unknown hop field cons. ingress interface",
        [50] = "Unknown hop field cons. egress interface", [51] = "Invalid hop field MAC",
        [52] = "Path expired", [53] = "Invalid segment change", [64] = "Invalid extension header",
        [65] = "Unknown hop-by-hop option", [66] = "Unknown end-to-end option" },
}
local vs_idint_mode = { [0] = "Off (every node)", [1] = "Per AS", [2] = "Per border router", [3] = "Per border router and internal" }
local vs_idint_verifier = { [0] = "Third party", [1] = "Destination", [2] = "Source", [3] = "Reserved" }
local vs_idint_af = { [0] = "First", [1] = "Last", [2] = "Minimum", [3] = "Maximum", [4] = "Sum" }
local vs_ml = { [0] = "absent", [1] = "2 bytes", [2] = "4 bytes", [3] = "6 bytes", [4] = "8 bytes" }

-- The ID-INT instruction table (docs/spec/idint.md §6.1, idint-wire's INSTRUCTIONS).
local vs_idint_inst = {
    [0x00] = "NOP", [0x01] = "ISD", [0x02] = "BR link type", [0x03] = "Device type/role",
    [0x04] = "CPU/memory usage", [0x05] = "CPU temperature", [0x06] = "ASIC temperature",
    [0x07] = "Fan speed", [0x08] = "Total power draw", [0x09] = "Energy mix",
    [0x41] = "Device vendor", [0x42] = "Device model", [0x43] = "Software version",
    [0x44] = "Node IPv4 address", [0x45] = "Ingress IF speed", [0x46] = "Egress IF speed",
    [0x47] = "GPS latitude", [0x48] = "GPS longitude", [0x49] = "Uptime",
    [0x4a] = "Forwarding energy", [0x4b] = "CO2 per packet",
    [0x4c] = "Ingress link RX utilisation", [0x4d] = "Egress link TX utilisation",
    [0x4e] = "Queue ID", [0x4f] = "Instantaneous queue length", [0x50] = "Average queue length",
    [0x51] = "Buffer ID", [0x52] = "Instantaneous buffer occupancy", [0x53] = "Average buffer occupancy",
    [0x81] = "ASN", [0x82] = "Ingress timestamp", [0x83] = "Egress timestamp",
    [0x84] = "Ingress SCION-IF packet count", [0x85] = "Egress SCION-IF packet count",
    [0x86] = "Ingress SCION-IF drop count", [0x87] = "Egress SCION-IF drop count",
    [0x88] = "Ingress SCION-IF byte count", [0x89] = "Egress SCION-IF byte count",
    [0x8a] = "Ingress total packet count", [0x8b] = "Egress total packet count",
    [0x8c] = "Ingress total drop count", [0x8d] = "Egress total drop count",
    [0x8e] = "Ingress total byte count", [0x8f] = "Egress total byte count",
    [0xc1] = "Node IPv6 address (high)", [0xc2] = "Node IPv6 address (low)",
}

-------------------------------------------------------------------------------------------
-- Fields
-------------------------------------------------------------------------------------------

local F = {}
local function field(name, ctor, ...)
    F[name] = ctor(...)
end

-- Common header
field("version", ProtoField.uint8, "scion.version", "Version", base.DEC, nil, 0xf0)
field("traffic_class", ProtoField.uint16, "scion.traffic_class", "Traffic class", base.DEC, nil, 0x0ff0)
field("flow_id", ProtoField.uint32, "scion.flow_id", "Flow ID", base.DEC, nil, 0x000fffff)
field("next_hdr", ProtoField.uint8, "scion.next_hdr", "Next header", base.DEC, vs_next_hdr)
field("hdr_len", ProtoField.uint8, "scion.hdr_len", "Header length (4-byte units)", base.DEC)
field("payload_len", ProtoField.uint16, "scion.payload_len", "Payload length", base.DEC)
field("path_type", ProtoField.uint8, "scion.path_type", "Path type", base.DEC, vs_path_type)
field("dst_type", ProtoField.uint8, "scion.dst_type", "Destination address type", base.DEC, vs_addr_type, 0xc0)
field("dst_len", ProtoField.uint8, "scion.dst_len", "Destination address length code", base.DEC, nil, 0x30)
field("src_type", ProtoField.uint8, "scion.src_type", "Source address type", base.DEC, vs_addr_type, 0x0c)
field("src_len", ProtoField.uint8, "scion.src_len", "Source address length code", base.DEC, nil, 0x03)
field("rsv", ProtoField.uint16, "scion.rsv", "Reserved", base.DEC)
-- Address header
field("dst_ia", ProtoField.string, "scion.dst_ia", "Destination ISD-AS")
field("dst_isd", ProtoField.uint16, "scion.dst_isd", "Destination ISD", base.DEC)
field("dst_as", ProtoField.string, "scion.dst_as", "Destination AS")
field("src_ia", ProtoField.string, "scion.src_ia", "Source ISD-AS")
field("src_isd", ProtoField.uint16, "scion.src_isd", "Source ISD", base.DEC)
field("src_as", ProtoField.string, "scion.src_as", "Source AS")
field("dst_host_ipv4", ProtoField.ipv4, "scion.dst_host_ipv4", "Destination host (IPv4)")
field("dst_host_ipv6", ProtoField.ipv6, "scion.dst_host_ipv6", "Destination host (IPv6)")
field("dst_host_svc", ProtoField.uint16, "scion.dst_host_svc", "Destination host (SVC)", base.HEX, vs_svc)
field("dst_host_raw", ProtoField.bytes, "scion.dst_host_raw", "Destination host (unknown type)")
field("src_host_ipv4", ProtoField.ipv4, "scion.src_host_ipv4", "Source host (IPv4)")
field("src_host_ipv6", ProtoField.ipv6, "scion.src_host_ipv6", "Source host (IPv6)")
field("src_host_svc", ProtoField.uint16, "scion.src_host_svc", "Source host (SVC)", base.HEX, vs_svc)
field("src_host_raw", ProtoField.bytes, "scion.src_host_raw", "Source host (unknown type)")
-- SCION path
field("curr_inf", ProtoField.uint32, "scion.path.curr_inf", "CurrINF", base.DEC, nil, 0xc0000000)
field("curr_hf", ProtoField.uint32, "scion.path.curr_hf", "CurrHF", base.DEC, nil, 0x3f000000)
field("meta_rsv", ProtoField.uint32, "scion.path.rsv", "Reserved", base.DEC, nil, 0x00fc0000)
field("seg0_len", ProtoField.uint32, "scion.path.seg0_len", "Seg0Len", base.DEC, nil, 0x0003f000)
field("seg1_len", ProtoField.uint32, "scion.path.seg1_len", "Seg1Len", base.DEC, nil, 0x00000fc0)
field("seg2_len", ProtoField.uint32, "scion.path.seg2_len", "Seg2Len", base.DEC, nil, 0x0000003f)
field("info_peer", ProtoField.bool, "scion.path.info.peer", "Peer (P)", 8, nil, 0x02)
field("info_cons_dir", ProtoField.bool, "scion.path.info.cons_dir", "ConsDir (C)", 8, nil, 0x01)
field("info_seg_id", ProtoField.uint16, "scion.path.info.seg_id", "SegID", base.HEX)
field("info_timestamp", ProtoField.uint32, "scion.path.info.timestamp", "Timestamp (Unix s)", base.DEC)
field("hop_ingress_alert", ProtoField.bool, "scion.path.hop.ingress_alert", "ConsIngress router alert (I)", 8, nil, 0x02)
field("hop_egress_alert", ProtoField.bool, "scion.path.hop.egress_alert", "ConsEgress router alert (E)", 8, nil, 0x01)
field("hop_exp_time", ProtoField.uint8, "scion.path.hop.exp_time", "ExpTime", base.DEC)
field("hop_cons_ingress", ProtoField.uint16, "scion.path.hop.cons_ingress", "ConsIngress", base.DEC)
field("hop_cons_egress", ProtoField.uint16, "scion.path.hop.cons_egress", "ConsEgress", base.DEC)
field("hop_mac", ProtoField.bytes, "scion.path.hop.mac", "MAC")
-- EPIC-HP
field("epic_ts", ProtoField.uint32, "scion.path.epic.timestamp", "EpicTS (21 µs units)", base.DEC)
field("epic_counter", ProtoField.uint32, "scion.path.epic.counter", "Counter", base.DEC)
field("epic_phvf", ProtoField.bytes, "scion.path.epic.phvf", "PHVF")
field("epic_lhvf", ProtoField.bytes, "scion.path.epic.lhvf", "LHVF")
-- Extensions
field("hbh_next_hdr", ProtoField.uint8, "scion.hbh.next_hdr", "Next header", base.DEC, vs_next_hdr)
field("hbh_ext_len", ProtoField.uint8, "scion.hbh.ext_len", "ExtLen", base.DEC)
field("e2e_next_hdr", ProtoField.uint8, "scion.e2e.next_hdr", "Next header", base.DEC, vs_next_hdr)
field("e2e_ext_len", ProtoField.uint8, "scion.e2e.ext_len", "ExtLen", base.DEC)
field("opt_type", ProtoField.uint8, "scion.opt.type", "Option type", base.DEC)
field("opt_len", ProtoField.uint8, "scion.opt.len", "Option data length", base.DEC)
field("opt_data", ProtoField.bytes, "scion.opt.data", "Option data")
-- SPAO
field("spao_spi", ProtoField.uint32, "scion.spao.spi", "SPI", base.DEC)
field("spao_algorithm", ProtoField.uint8, "scion.spao.algorithm", "Algorithm", base.DEC, vs_spao_alg)
field("spao_timestamp", ProtoField.uint64, "scion.spao.timestamp", "Timestamp / sequence number", base.DEC)
field("spao_authenticator", ProtoField.bytes, "scion.spao.authenticator", "Authenticator")
-- ID-INT main option
field("idint_version", ProtoField.uint8, "scion.idint.version", "Version", base.DEC, nil, 0xe0)
field("idint_infrastructure", ProtoField.bool, "scion.idint.flags.infrastructure", "Infrastructure mode (I)", 8, nil, 0x10)
field("idint_discard", ProtoField.bool, "scion.idint.flags.discard", "Discard (D)", 8, nil, 0x08)
field("idint_encrypt", ProtoField.bool, "scion.idint.flags.encrypt", "Encrypt (E)", 8, nil, 0x04)
field("idint_stack_full", ProtoField.bool, "scion.idint.flags.stack_full", "Stack full (X)", 8, nil, 0x02)
field("idint_reserved", ProtoField.bool, "scion.idint.flags.reserved", "Reserved (R)", 8, nil, 0x01)
field("idint_mode", ProtoField.uint8, "scion.idint.mode", "Aggregation mode", base.DEC, vs_idint_mode, 0xc0)
field("idint_verifier", ProtoField.uint8, "scion.idint.verifier", "Verifier", base.DEC, vs_idint_verifier, 0x30)
field("idint_vt", ProtoField.uint8, "scion.idint.verifier_type", "Verifier address type", base.DEC, vs_addr_type, 0x0c)
field("idint_vl", ProtoField.uint8, "scion.idint.verifier_len", "Verifier address length code", base.DEC, nil, 0x03)
field("idint_stack_len", ProtoField.uint8, "scion.idint.stack_len", "Stack length (4-byte words)", base.DEC)
field("idint_tos", ProtoField.uint8, "scion.idint.tos", "Top of stack (4-byte words)", base.DEC)
field("idint_delay_hops", ProtoField.uint8, "scion.idint.delay_hops", "Delay hops", base.DEC, nil, 0xfc)
field("idint_inst_bitmap", ProtoField.uint16, "scion.idint.inst_bitmap", "Instruction bitmap", base.HEX, nil, 0xf000)
field("idint_bm_node_id", ProtoField.bool, "scion.idint.inst_bitmap.node_id", "Node ID", 16, nil, 0x8000)
field("idint_bm_node_count", ProtoField.bool, "scion.idint.inst_bitmap.node_count", "Node count", 16, nil, 0x4000)
field("idint_bm_ingress_if", ProtoField.bool, "scion.idint.inst_bitmap.ingress_if", "Ingress interface", 16, nil, 0x2000)
field("idint_bm_egress_if", ProtoField.bool, "scion.idint.inst_bitmap.egress_if", "Egress interface", 16, nil, 0x1000)
field("idint_af1", ProtoField.uint16, "scion.idint.af1", "Aggregation function 1", base.DEC, vs_idint_af, 0x0e00)
field("idint_af2", ProtoField.uint16, "scion.idint.af2", "Aggregation function 2", base.DEC, vs_idint_af, 0x01c0)
field("idint_af3", ProtoField.uint16, "scion.idint.af3", "Aggregation function 3", base.DEC, vs_idint_af, 0x0038)
field("idint_af4", ProtoField.uint16, "scion.idint.af4", "Aggregation function 4", base.DEC, vs_idint_af, 0x0007)
field("idint_inst", ProtoField.uint8, "scion.idint.inst", "Instruction", base.HEX, vs_idint_inst)
field("idint_source_ts", ProtoField.uint64, "scion.idint.source_ts", "Source timestamp (ns mod 2^48)", base.DEC)
field("idint_source_port", ProtoField.uint16, "scion.idint.source_port", "Source port", base.DEC)
field("idint_verifier_ia", ProtoField.string, "scion.idint.verifier_ia", "Verifier ISD-AS")
field("idint_verifier_isd", ProtoField.uint16, "scion.idint.verifier_isd", "Verifier ISD", base.DEC)
field("idint_verifier_as", ProtoField.string, "scion.idint.verifier_as", "Verifier AS")
field("idint_verifier_ipv4", ProtoField.ipv4, "scion.idint.verifier_ipv4", "Verifier host (IPv4)")
field("idint_verifier_ipv6", ProtoField.ipv6, "scion.idint.verifier_ipv6", "Verifier host (IPv6)")
-- ID-INT stack entries
field("entry_source", ProtoField.bool, "scion.idint.entry.source", "Source entry (S)", 8, nil, 0x80)
field("entry_ingress", ProtoField.bool, "scion.idint.entry.ingress", "Ingress (I)", 8, nil, 0x40)
field("entry_egress", ProtoField.bool, "scion.idint.entry.egress", "Egress (E)", 8, nil, 0x20)
field("entry_aggregated", ProtoField.bool, "scion.idint.entry.aggregated", "Aggregated (A)", 8, nil, 0x10)
field("entry_encrypted", ProtoField.bool, "scion.idint.entry.encrypted", "Encrypted (C)", 8, nil, 0x08)
field("entry_hop", ProtoField.uint8, "scion.idint.entry.hop", "Hop", base.DEC, nil, 0xfc)
field("entry_mask", ProtoField.uint16, "scion.idint.entry.mask", "Metadata mask", base.HEX, nil, 0xf000)
field("entry_ml1", ProtoField.uint16, "scion.idint.entry.ml1", "Slot 1 length (ML1)", base.DEC, vs_ml, 0x0e00)
field("entry_ml2", ProtoField.uint16, "scion.idint.entry.ml2", "Slot 2 length (ML2)", base.DEC, vs_ml, 0x01c0)
field("entry_ml3", ProtoField.uint16, "scion.idint.entry.ml3", "Slot 3 length (ML3)", base.DEC, vs_ml, 0x0038)
field("entry_ml4", ProtoField.uint16, "scion.idint.entry.ml4", "Slot 4 length (ML4)", base.DEC, vs_ml, 0x0007)
field("entry_nonce", ProtoField.bytes, "scion.idint.entry.nonce", "Nonce")
field("entry_encrypted_data", ProtoField.bytes, "scion.idint.entry.encrypted_data", "Encrypted metadata")
field("entry_node_id", ProtoField.uint32, "scion.idint.entry.node_id", "Node ID", base.DEC)
field("entry_node_count", ProtoField.uint16, "scion.idint.entry.node_count", "Node count", base.DEC)
field("entry_ingress_if", ProtoField.uint16, "scion.idint.entry.ingress_if", "Ingress interface", base.DEC)
field("entry_egress_if", ProtoField.uint16, "scion.idint.entry.egress_if", "Egress interface", base.DEC)
field("entry_slot1", ProtoField.uint64, "scion.idint.entry.slot1", "Slot 1", base.DEC)
field("entry_slot2", ProtoField.uint64, "scion.idint.entry.slot2", "Slot 2", base.DEC)
field("entry_slot3", ProtoField.uint64, "scion.idint.entry.slot3", "Slot 3", base.DEC)
field("entry_slot4", ProtoField.uint64, "scion.idint.entry.slot4", "Slot 4", base.DEC)
field("entry_padding", ProtoField.bytes, "scion.idint.entry.padding", "Padding")
field("entry_mac", ProtoField.bytes, "scion.idint.entry.mac", "MAC")
-- UDP/SCION
field("udp_srcport", ProtoField.uint16, "scion.udp.srcport", "Source port", base.DEC)
field("udp_dstport", ProtoField.uint16, "scion.udp.dstport", "Destination port", base.DEC)
field("udp_length", ProtoField.uint16, "scion.udp.length", "Length", base.DEC)
field("udp_checksum", ProtoField.uint16, "scion.udp.checksum", "Checksum", base.HEX)
-- SCMP
field("scmp_type", ProtoField.uint8, "scion.scmp.type", "Type", base.DEC, vs_scmp_type)
field("scmp_code", ProtoField.uint8, "scion.scmp.code", "Code", base.DEC)
field("scmp_checksum", ProtoField.uint16, "scion.scmp.checksum", "Checksum", base.HEX)
field("scmp_mtu", ProtoField.uint16, "scion.scmp.mtu", "MTU", base.DEC)
field("scmp_pointer", ProtoField.uint16, "scion.scmp.pointer", "Pointer", base.DEC)
field("scmp_ia", ProtoField.string, "scion.scmp.ia", "ISD-AS")
field("scmp_interface", ProtoField.uint64, "scion.scmp.interface", "Interface ID", base.DEC)
field("scmp_ingress_if", ProtoField.uint64, "scion.scmp.ingress_if", "Ingress interface ID", base.DEC)
field("scmp_egress_if", ProtoField.uint64, "scion.scmp.egress_if", "Egress interface ID", base.DEC)
field("scmp_id", ProtoField.uint16, "scion.scmp.id", "Identifier", base.DEC)
field("scmp_seq", ProtoField.uint16, "scion.scmp.seq", "Sequence number", base.DEC)
field("scmp_data", ProtoField.bytes, "scion.scmp.data", "Data")
field("scmp_quote", ProtoField.bytes, "scion.scmp.quote", "Quoted packet")
field("payload", ProtoField.bytes, "scion.payload", "Payload")

local field_list = {}
for _, f in pairs(F) do field_list[#field_list + 1] = f end
scion.fields = field_list

local ex_malformed = ProtoExpert.new("scion.malformed", "Malformed SCION packet",
    expert.group.MALFORMED, expert.severity.ERROR)
local ex_internal = ProtoExpert.new("scion.internal_error", "SCION dissector internal error",
    expert.group.UNDECODED, expert.severity.ERROR)
local ex_quote = ProtoExpert.new("scion.quote_truncated", "Quoted packet is incomplete",
    expert.group.COMMENTS_GROUP, expert.severity.NOTE)
local ex_slot_len = ProtoExpert.new("scion.idint.slot_len_mismatch",
    "Slot length differs from the instruction's data length", expert.group.PROTOCOL, expert.severity.WARN)
scion.experts = { ex_malformed, ex_internal, ex_quote, ex_slot_len }

-------------------------------------------------------------------------------------------
-- Preferences
-------------------------------------------------------------------------------------------

local DEFAULT_PORTS = "30041-30051,50000"
scion.prefs.ports = Pref.range("UDP ports", DEFAULT_PORTS,
    "UDP ports of the SCION underlay (end-host dispatcher, border router internal and link ports)", 65535)
scion.prefs.heuristic = Pref.bool("Try heuristic on other UDP ports", false,
    "Also try to decode UDP payloads on other ports as SCION when the headers look consistent")

-------------------------------------------------------------------------------------------
-- Helpers
-------------------------------------------------------------------------------------------

-- Raised (as a table) to stop dissection at a malformed layer.
local Malformed = {}

local function as_string(hi16, lo32)
    -- AS number from the high 16 bits and low 32 bits of the 48-bit field.
    if hi16 == 0 then
        return tostring(lo32)
    end
    return string.format("%x:%x:%x", hi16, math.floor(lo32 / 65536), lo32 % 65536)
end

-- Context of one dissection: the tvb, the tree of the current layer and the quote mode.
local Ctx = {}
Ctx.__index = Ctx

function Ctx:len() return self.tvb:len() end

-- Stops with a malformed note unless `n` bytes are present at `off`.
function Ctx:need(off, n, what)
    if off + n > self.tvb:len() then
        self:fail(self.root, string.format("%s truncated: needs %d bytes at offset %d, %d present",
            what, n, off, math.max(self.tvb:len() - off, 0)))
    end
end

function Ctx:fail(tree, msg)
    if self.quoted then
        tree:add_proto_expert_info(ex_quote, msg)
    else
        tree:add_proto_expert_info(ex_malformed, msg)
    end
    error(Malformed)
end

function Ctx:r(off, n) return self.tvb(off, n) end

function Ctx:ia(tree, off, f_ia, f_isd, f_as)
    local isd = self.tvb(off, 2):uint()
    local as = as_string(self.tvb(off + 2, 2):uint(), self.tvb(off + 4, 4):uint())
    local s = string.format("%d-%s", isd, as)
    local t = tree:add(f_ia, self.tvb(off, 8), s)
    if f_isd then
        t:add(f_isd, self.tvb(off, 2))
        t:add(f_as, self.tvb(off + 2, 6), as)
    end
    return s
end

-- Adds a 2/4/6/8-byte big-endian unsigned value as a 64-bit field.
local function add_u64(tree, f, range)
    return tree:add(f, range, range:uint64())
end

-------------------------------------------------------------------------------------------
-- Paths
-------------------------------------------------------------------------------------------

local function info_field(ctx, tree, off, i)
    local t = tree:add(ctx:r(off, 8), string.format("Info field %d", i))
    t:add(F.info_peer, ctx:r(off, 1))
    t:add(F.info_cons_dir, ctx:r(off, 1))
    t:add(F.info_seg_id, ctx:r(off + 2, 2))
    t:add(F.info_timestamp, ctx:r(off + 4, 4))
    local c = ctx:r(off, 1):uint() % 2
    t:append_text(string.format(": C=%d SegID=0x%04x", c, ctx:r(off + 2, 2):uint()))
end

local function hop_field(ctx, tree, off, label)
    local t = tree:add(ctx:r(off, 12), label)
    t:add(F.hop_ingress_alert, ctx:r(off, 1))
    t:add(F.hop_egress_alert, ctx:r(off, 1))
    t:add(F.hop_exp_time, ctx:r(off + 1, 1))
    t:add(F.hop_cons_ingress, ctx:r(off + 2, 2))
    t:add(F.hop_cons_egress, ctx:r(off + 4, 2))
    t:add(F.hop_mac, ctx:r(off + 6, 6))
    t:append_text(string.format(": %d -> %d", ctx:r(off + 2, 2):uint(), ctx:r(off + 4, 2):uint()))
end

-- A SCION (type 1) path at `off` with `avail` bytes before the end of the header.
local function scion_path(ctx, tree, off, avail)
    if avail < 4 then ctx:fail(tree, "SCION path: PathMeta truncated") end
    local w = ctx:r(off, 4):uint()
    local curr_inf = math.floor(w / 2^30)
    local curr_hf = math.floor(w / 2^24) % 64
    local seg = { math.floor(w / 2^12) % 64, math.floor(w / 2^6) % 64, w % 64 }
    local mt = tree:add(ctx:r(off, 4), "PathMeta")
    mt:add(F.curr_inf, ctx:r(off, 4))
    mt:add(F.curr_hf, ctx:r(off, 4))
    mt:add(F.meta_rsv, ctx:r(off, 4))
    mt:add(F.seg0_len, ctx:r(off, 4))
    mt:add(F.seg1_len, ctx:r(off, 4))
    mt:add(F.seg2_len, ctx:r(off, 4))
    local ninf = 0
    if seg[3] > 0 then ninf = 3 elseif seg[2] > 0 then ninf = 2 elseif seg[1] > 0 then ninf = 1 end
    local nhops = seg[1] + seg[2] + seg[3]
    if ninf == 0 or (seg[1] == 0 and ninf > 1) or (seg[2] == 0 and ninf > 2) or nhops > 64 then
        ctx:fail(mt, "SCION path: invalid SegLen")
    end
    if curr_inf >= ninf then ctx:fail(mt, "SCION path: CurrINF beyond the info fields") end
    if curr_hf >= nhops then ctx:fail(mt, "SCION path: CurrHF beyond the hop fields") end
    local plen = 4 + 8 * ninf + 12 * nhops
    if plen > avail then
        ctx:fail(tree, string.format("SCION path truncated: %d bytes needed, %d in the header", plen, avail))
    end
    mt:append_text(string.format(": CurrINF=%d CurrHF=%d SegLen=%d/%d/%d", curr_inf, curr_hf, seg[1], seg[2], seg[3]))
    for i = 0, ninf - 1 do
        info_field(ctx, tree, off + 4 + 8 * i, i)
    end
    for j = 0, nhops - 1 do
        local label = string.format("Hop field %d", j)
        if j == curr_hf then label = label .. " (current)" end
        hop_field(ctx, tree, off + 4 + 8 * ninf + 12 * j, label)
    end
end

local function path(ctx, tree, ptype, off, avail)
    if ptype == 0 then
        tree:add(ctx:r(off, 0), "Path: Empty")
        return
    end
    local t = tree:add(ctx:r(off, avail), "Path: " .. (vs_path_type[ptype] or "unknown"))
    if ptype == 1 then
        scion_path(ctx, t, off, avail)
    elseif ptype == 2 then
        if avail < 32 then ctx:fail(t, "OneHop path truncated") end
        info_field(ctx, t, off, 0)
        hop_field(ctx, t, off + 8, "First hop field")
        hop_field(ctx, t, off + 20, "Second hop field")
    elseif ptype == 3 then
        if avail < 16 then ctx:fail(t, "EPIC-HP path truncated") end
        t:add(F.epic_ts, ctx:r(off, 4))
        t:add(F.epic_counter, ctx:r(off + 4, 4))
        t:add(F.epic_phvf, ctx:r(off + 8, 4))
        t:add(F.epic_lhvf, ctx:r(off + 12, 4))
        scion_path(ctx, t, off + 16, avail - 16)
    else
        ctx:fail(t, "Unsupported path type " .. ptype)
    end
end

-------------------------------------------------------------------------------------------
-- ID-INT
-------------------------------------------------------------------------------------------

local MAIN_BASE = 22

-- The ID-INT main option at `off` (type byte), `total` bytes, into its option tree. Returns its
-- facts.
local function idint_main(ctx, tree, off, total)
    local tvb = ctx.tvb
    local t = tree
    if total < MAIN_BASE then ctx:fail(t, "ID-INT main option shorter than 22 bytes") end
    local b2, b3 = tvb(off + 2, 1):uint(), tvb(off + 3, 1):uint()
    local ver = math.floor(b2 / 32)
    local vrf = math.floor(b3 / 16) % 4
    local vtl = b3 % 16
    t:add(F.idint_version, ctx:r(off + 2, 1))
    local ft = t:add(ctx:r(off + 2, 1), "Flags")
    ft:add(F.idint_infrastructure, ctx:r(off + 2, 1))
    ft:add(F.idint_discard, ctx:r(off + 2, 1))
    ft:add(F.idint_encrypt, ctx:r(off + 2, 1))
    ft:add(F.idint_stack_full, ctx:r(off + 2, 1))
    ft:add(F.idint_reserved, ctx:r(off + 2, 1))
    t:add(F.idint_mode, ctx:r(off + 3, 1))
    t:add(F.idint_verifier, ctx:r(off + 3, 1))
    t:add(F.idint_vt, ctx:r(off + 3, 1))
    t:add(F.idint_vl, ctx:r(off + 3, 1))
    t:add(F.idint_stack_len, ctx:r(off + 4, 1))
    t:add(F.idint_tos, ctx:r(off + 5, 1))
    t:add(F.idint_delay_hops, ctx:r(off + 6, 1))
    local bt = t:add(F.idint_inst_bitmap, ctx:r(off + 8, 2))
    bt:add(F.idint_bm_node_id, ctx:r(off + 8, 2))
    bt:add(F.idint_bm_node_count, ctx:r(off + 8, 2))
    bt:add(F.idint_bm_ingress_if, ctx:r(off + 8, 2))
    bt:add(F.idint_bm_egress_if, ctx:r(off + 8, 2))
    t:add(F.idint_af1, ctx:r(off + 8, 2))
    t:add(F.idint_af2, ctx:r(off + 8, 2))
    t:add(F.idint_af3, ctx:r(off + 8, 2))
    t:add(F.idint_af4, ctx:r(off + 8, 2))
    local insts = {}
    for k = 0, 3 do
        insts[k + 1] = tvb(off + 10 + k, 1):uint()
        local it = t:add(F.idint_inst, ctx:r(off + 10 + k, 1))
        it:prepend_text(string.format("Slot %d: ", k + 1))
    end
    add_u64(t, F.idint_source_ts, ctx:r(off + 14, 6))
    t:add(F.idint_source_port, ctx:r(off + 20, 2))
    if ver ~= 0 then ctx:fail(t, "ID-INT main option: unsupported version " .. ver) end
    if b2 % 2 ~= 0 then ctx:fail(t, "ID-INT main option: reserved flag R set") end
    local want
    if vrf == 0 then
        if vtl ~= 0 and vtl ~= 3 then ctx:fail(t, "ID-INT main option: verifier must be IPv4 or IPv6") end
        want = MAIN_BASE + 8 + (vtl == 0 and 4 or 16)
    elseif vrf == 1 or vrf == 2 then
        if vtl ~= 0 then ctx:fail(t, "ID-INT main option: VT/VL must be 0 without a third-party verifier") end
        want = MAIN_BASE
    else
        ctx:fail(t, "ID-INT main option: reserved verifier 3")
    end
    if total ~= want then
        ctx:fail(t, string.format("ID-INT main option: OptDataLen %d, expected %d", total - 2, want - 2))
    end
    if vrf == 0 then
        local vt = t:add(ctx:r(off + 22, want - 22), "Verifier")
        local ia = ctx:ia(vt, off + 22, F.idint_verifier_ia, F.idint_verifier_isd, F.idint_verifier_as)
        if vtl == 0 then
            vt:add(F.idint_verifier_ipv4, ctx:r(off + 30, 4))
            vt:append_text(": " .. ia .. "," .. tostring(tvb(off + 30, 4):ipv4()))
        else
            vt:add(F.idint_verifier_ipv6, ctx:r(off + 30, 16))
            vt:append_text(": " .. ia .. "," .. tostring(tvb(off + 30, 16):ipv6()))
        end
    end
    t:append_text(string.format(": mode %d, verifier %s, stack %d B, TOS %d", math.floor(b3 / 64),
        vs_idint_verifier[vrf], tvb(off + 4, 1):uint() * 4, tvb(off + 5, 1):uint() * 4))
    return {
        stack_len = tvb(off + 4, 1):uint() * 4,
        tos = tvb(off + 5, 1):uint() * 4,
        insts = insts,
    }
end

local function inst_len(code)
    if code == 0 then return 0 end
    return 2 * (math.floor(code / 64) + 1)
end

-- Checks an entry's length rules (idint-wire Entry::check_len); returns the decoded layout or
-- nil and the reason.
local function entry_layout(tvb, off, avail)
    if avail < 6 then return nil, "ID-INT entry truncated" end
    if tvb(off, 1):uint() ~= 254 then return nil, "not an ID-INT entry" end
    local total = tvb(off + 1, 1):uint() + 2
    if total < 12 or total % 4 ~= 0 then return nil, "ID-INT entry: OptDataLen " .. (total - 2) end
    if total > avail then return nil, "ID-INT entry truncated" end
    local word = tvb(off + 4, 2):uint()
    local mask = math.floor(word / 4096)
    local ml = { math.floor(word / 512) % 8, math.floor(word / 64) % 8, math.floor(word / 8) % 8, word % 8 }
    local md = 0
    if mask >= 8 then md = md + 4 end
    for bit = 2, 0, -1 do
        if math.floor(mask / 2^bit) % 2 == 1 then md = md + 2 end
    end
    for k = 1, 4 do
        if ml[k] > 4 then return nil, "ID-INT entry: invalid ML" .. k end
        md = md + 2 * ml[k]
    end
    local encrypted = math.floor(tvb(off + 2, 1):uint() / 8) % 2 == 1
    local md_off = encrypted and 18 or 6
    local pad = total - (md_off + 4 + md)
    if pad < 0 or pad > 3 then return nil, "ID-INT entry: OptDataLen does not match the metadata" end
    return { total = total, mask = mask, ml = ml, md = md, md_off = md_off, pad = pad,
        encrypted = encrypted, source = tvb(off + 2, 1):uint() >= 128 }
end

local function idint_entry(ctx, tree, off, total, main)
    local tvb = ctx.tvb
    local t = tree
    local l, why = entry_layout(tvb, off, total)
    if total >= 6 then
        local ft = t:add(ctx:r(off + 2, 1), "Flags")
        ft:add(F.entry_source, ctx:r(off + 2, 1))
        ft:add(F.entry_ingress, ctx:r(off + 2, 1))
        ft:add(F.entry_egress, ctx:r(off + 2, 1))
        ft:add(F.entry_aggregated, ctx:r(off + 2, 1))
        ft:add(F.entry_encrypted, ctx:r(off + 2, 1))
        t:add(F.entry_hop, ctx:r(off + 3, 1))
        t:add(F.entry_mask, ctx:r(off + 4, 2))
        t:add(F.entry_ml1, ctx:r(off + 4, 2))
        t:add(F.entry_ml2, ctx:r(off + 4, 2))
        t:add(F.entry_ml3, ctx:r(off + 4, 2))
        t:add(F.entry_ml4, ctx:r(off + 4, 2))
    end
    if not l then ctx:fail(t, why) end
    local hop = math.floor(tvb(off + 3, 1):uint() / 4)
    local flags = {}
    local fb = tvb(off + 2, 1):uint()
    for i, n in ipairs({ "S", "I", "E", "A", "C" }) do
        if math.floor(fb / 2^(8 - i)) % 2 == 1 then flags[#flags + 1] = n end
    end
    t:append_text(string.format(": hop %d [%s]", hop, table.concat(flags, " ")))
    if l.encrypted then
        t:add(F.entry_nonce, ctx:r(off + 6, 12))
    end
    local p = off + l.md_off
    if l.encrypted then
        if l.md + l.pad > 0 then
            t:add(F.entry_encrypted_data, ctx:r(p, l.md + l.pad))
        end
        t:append_text(" (encrypted)")
    else
        local items = { { 8, 4, F.entry_node_id }, { 4, 2, F.entry_node_count },
            { 2, 2, F.entry_ingress_if }, { 1, 2, F.entry_egress_if } }
        for _, it in ipairs(items) do
            if math.floor(l.mask / it[1]) % 2 == 1 then
                t:add(it[3], ctx:r(p, it[2]))
                p = p + it[2]
            end
        end
        local slots = { F.entry_slot1, F.entry_slot2, F.entry_slot3, F.entry_slot4 }
        for k = 1, 4 do
            local n = 2 * l.ml[k]
            if n > 0 then
                local code = main and main.insts[k] or nil
                local it = add_u64(t, slots[k], ctx:r(p, n))
                if code then
                    it:append_text(string.format(" (%s, 0x%02x)", vs_idint_inst[code] or "unassigned", code))
                    if inst_len(code) ~= n then
                        it:add_proto_expert_info(ex_slot_len, string.format(
                            "Slot %d holds %d bytes, instruction 0x%02x has %d", k, n, code, inst_len(code)))
                    end
                end
                p = p + n
            end
        end
        if l.pad > 0 then
            t:add(F.entry_padding, ctx:r(p, l.pad))
        end
    end
    t:add(F.entry_mac, ctx:r(off + total - 4, 4))
    return l
end

-- The checks of idint-wire IdInt::locate and IdInt::check on the HBH header at `base`.
local function idint_check(ctx, tree, base, hbh_len, main_off, opts)
    local tvb = ctx.tvb
    if main_off % 4 ~= 2 then ctx:fail(tree, "ID-INT main option not at offset 4n+2") end
    local main_total = tvb(base + main_off + 1, 1):uint() + 2
    local st = main_off + main_total
    local se = st + tvb(base + main_off + 4, 1):uint() * 4
    if se > hbh_len then ctx:fail(tree, "ID-INT stack runs past the HBH header") end
    local tos = tvb(base + main_off + 5, 1):uint() * 4
    -- Entries from the start of the stack, then only padding.
    local pos, last = st, nil
    while pos < se and tvb(base + pos, 1):uint() == 254 do
        local l, why = entry_layout(tvb, base + pos, se - pos)
        if not l then ctx:fail(tree, why .. " (inside the stack)") end
        if l.source ~= (pos == st) then
            ctx:fail(tree, "ID-INT stack: S flag must be set on the first entry only")
        end
        last = pos - st
        pos = pos + l.total
    end
    while pos < se do
        local ty = tvb(base + pos, 1):uint()
        if ty == 0 then
            pos = pos + 1
        else
            if pos + 2 > se or pos + 2 + tvb(base + pos + 1, 1):uint() > se then
                ctx:fail(tree, "ID-INT stack: padding runs past the stack")
            end
            if ty ~= 1 then ctx:fail(tree, "ID-INT stack: non-padding option inside the stack") end
            pos = pos + 2 + tvb(base + pos + 1, 1):uint()
        end
    end
    if tos ~= (last or 0) then
        ctx:fail(tree, string.format("ID-INT stack: TOS %d does not point at the newest entry", tos))
    end
    local used = last and (pos - st) or 0
    tree:append_text(string.format(", ID-INT stack %d B", se - st))
    return used
end

-------------------------------------------------------------------------------------------
-- Extension headers
-------------------------------------------------------------------------------------------

local function extension(ctx, tree, off, hbh)
    local tvb = ctx.tvb
    local name = hbh and "Hop-by-hop options" or "End-to-end options"
    if off + 2 > tvb:len() then
        ctx:fail(tree, name .. " header truncated")
    end
    local len = (tvb(off + 1, 1):uint() + 1) * 4
    local t = tree:add(ctx:r(off, math.min(len, tvb:len() - off)), name)
    t:add(hbh and F.hbh_next_hdr or F.e2e_next_hdr, ctx:r(off, 1))
    t:add(hbh and F.hbh_ext_len or F.e2e_ext_len, ctx:r(off + 1, 1))
    if off + len > tvb:len() then
        ctx:fail(t, string.format("%s truncated: %d bytes announced, %d present", name, len, tvb:len() - off))
    end
    local pos = 2
    local main, main_off = nil, nil
    local entries = 0
    while pos < len do
        local ty = tvb(off + pos, 1):uint()
        local ot
        local vs = hbh and vs_hbh_opt or vs_e2e_opt
        if ty == 0 then
            ot = t:add(ctx:r(off + pos, 1), "Pad1")
            ot:add(F.opt_type, ctx:r(off + pos, 1))
            pos = pos + 1
        else
            if pos + 2 > len then
                t:add(F.opt_type, ctx:r(off + pos, 1))
                ctx:fail(t, "Option truncated: no length byte")
            end
            local dlen = tvb(off + pos + 1, 1):uint()
            local total = dlen + 2
            if pos + total > len then
                local tt = t:add(ctx:r(off + pos, len - pos), "Option")
                tt:add(F.opt_type, ctx:r(off + pos, 1))
                tt:add(F.opt_len, ctx:r(off + pos + 1, 1))
                ctx:fail(tt, string.format("Option runs past the header: %d bytes, %d left", total, len - pos))
            end
            ot = t:add(ctx:r(off + pos, total), vs[ty] or string.format("Option %d", ty))
            ot:add(F.opt_type, ctx:r(off + pos, 1))
            ot:add(F.opt_len, ctx:r(off + pos + 1, 1))
            if hbh and ty == 253 and not main then
                main = idint_main(ctx, ot, off + pos, total)
                main_off = pos
            elseif hbh and ty == 254 then
                idint_entry(ctx, ot, off + pos, total, main)
                entries = entries + 1
            elseif not hbh and ty == 2 then
                if dlen < 12 then ctx:fail(ot, "SPAO shorter than 12 bytes") end
                ot:add(F.spao_spi, ctx:r(off + pos + 2, 4))
                ot:add(F.spao_algorithm, ctx:r(off + pos + 6, 1))
                add_u64(ot, F.spao_timestamp, ctx:r(off + pos + 8, 6))
                if dlen > 12 then
                    ot:add(F.spao_authenticator, ctx:r(off + pos + 14, dlen - 12))
                end
                if tvb(off + pos + 2, 4):uint() == 0 then ctx:fail(ot, "SPAO: SPI 0 is reserved") end
            elseif ty ~= 1 and dlen > 0 then
                ot:add(F.opt_data, ctx:r(off + pos + 2, dlen))
            end
            pos = pos + total
        end
    end
    if main then
        idint_check(ctx, t, off, len, main_off)
    end
    return tvb(off, 1):uint(), len, t
end

-------------------------------------------------------------------------------------------
-- Layer 4
-------------------------------------------------------------------------------------------

local scmp_block = { [1] = 4, [2] = 4, [4] = 4, [5] = 16, [6] = 24, [128] = 4, [129] = 4, [130] = 20, [131] = 20 }

local dissect_scion -- forward

local function scmp(ctx, tree, off, pinfo)
    local tvb = ctx.tvb
    local n = tvb:len() - off
    local t = tree:add(ctx:r(off, n), "SCMP")
    if n < 4 then ctx:fail(t, "SCMP header truncated") end
    local ty, code = tvb(off, 1):uint(), tvb(off + 1, 1):uint()
    t:add(F.scmp_type, ctx:r(off, 1))
    local ct = t:add(F.scmp_code, ctx:r(off + 1, 1))
    local cname = scmp_codes[ty] and scmp_codes[ty][code]
    if cname then ct:append_text(" (" .. cname .. ")") end
    t:add(F.scmp_checksum, ctx:r(off + 2, 2))
    local blk = scmp_block[ty] or 0
    if n < 4 + blk then ctx:fail(t, "SCMP message truncated") end
    local b = off + 4
    local tname = vs_scmp_type[ty] or string.format("type %d", ty)
    t:append_text(": " .. tname .. (cname and (", " .. cname) or ""))
    if not ctx.quoted then
        pinfo.cols.info = "SCMP " .. tname .. (cname and (" (" .. cname .. ")") or "")
    end
    if ty == 2 then
        t:add(F.scmp_mtu, ctx:r(b + 2, 2))
    elseif ty == 4 then
        t:add(F.scmp_pointer, ctx:r(b + 2, 2))
    elseif ty == 5 then
        ctx:ia(t, b, F.scmp_ia)
        add_u64(t, F.scmp_interface, ctx:r(b + 8, 8))
    elseif ty == 6 then
        ctx:ia(t, b, F.scmp_ia)
        add_u64(t, F.scmp_ingress_if, ctx:r(b + 8, 8))
        add_u64(t, F.scmp_egress_if, ctx:r(b + 16, 8))
    elseif ty == 128 or ty == 129 or ty == 130 or ty == 131 then
        t:add(F.scmp_id, ctx:r(b, 2))
        t:add(F.scmp_seq, ctx:r(b + 2, 2))
        if ty >= 130 then
            ctx:ia(t, b + 4, F.scmp_ia)
            add_u64(t, F.scmp_interface, ctx:r(b + 12, 8))
        end
    end
    local rest = off + 4 + blk
    local rn = tvb:len() - rest
    if rn > 0 then
        if ty < 128 and blk > 0 then
            local qt = t:add(F.scmp_quote, ctx:r(rest, rn))
            -- The quote is usually cut short: decode what is there without flagging it.
            dissect_scion(tvb(rest, rn):tvb(), pinfo, qt, true)
        else
            t:add(F.scmp_data, ctx:r(rest, rn))
        end
    end
end

local function udp(ctx, tree, off, pinfo)
    local tvb = ctx.tvb
    local n = tvb:len() - off
    local t = tree:add(ctx:r(off, n), "UDP/SCION")
    if n < 8 then ctx:fail(t, "UDP header truncated") end
    t:add(F.udp_srcport, ctx:r(off, 2))
    t:add(F.udp_dstport, ctx:r(off + 2, 2))
    local ulen = tvb(off + 4, 2):uint()
    t:add(F.udp_length, ctx:r(off + 4, 2))
    t:add(F.udp_checksum, ctx:r(off + 6, 2))
    local sp, dp = tvb(off, 2):uint(), tvb(off + 2, 2):uint()
    t:append_text(string.format(", %d -> %d", sp, dp))
    if ulen < 8 then ctx:fail(t, "UDP length below 8") end
    if ulen > n then ctx:fail(t, string.format("UDP length %d beyond the %d bytes present", ulen, n)) end
    if not ctx.quoted then
        pinfo.cols.info = string.format("UDP %d -> %d, %d bytes", sp, dp, ulen - 8)
    end
    if ulen > 8 then
        t:add(F.payload, ctx:r(off + 8, ulen - 8))
    end
end

-------------------------------------------------------------------------------------------
-- Packet
-------------------------------------------------------------------------------------------

-- Wireshark 4.0 does not register BFD by name; take its handle from UDP port 3784.
local bfd_dissector = nil
local function bfd()
    if bfd_dissector == nil then
        local ok, d = pcall(function() return DissectorTable.get("udp.port"):get_dissector(3784) end)
        bfd_dissector = ok and d or false
    end
    return bfd_dissector
end

local function addr_len(code) return 4 * (code % 4 + 1) end

local function host(ctx, tree, off, code, f4, f6, fsvc, fraw)
    local n = addr_len(code)
    if code == 0 then
        tree:add(f4, ctx:r(off, 4))
        return tostring(ctx.tvb(off, 4):ipv4())
    elseif code == 3 then
        tree:add(f6, ctx:r(off, 16))
        return tostring(ctx.tvb(off, 16):ipv6())
    elseif code == 4 then
        tree:add(fsvc, ctx:r(off, 2))
        local v = ctx.tvb(off, 2):uint()
        return vs_svc[v] or string.format("SVC 0x%04x", v)
    else
        tree:add(fraw, ctx:r(off, n))
        return tostring(ctx.tvb(off, n):bytes())
    end
end

local function dissect_inner(ctx, pinfo, root)
    local tvb = ctx.tvb
    local t = root
    ctx.root = root
    ctx:need(0, 12, "SCION common header")
    t:add(F.version, ctx:r(0, 1))
    t:add(F.traffic_class, ctx:r(0, 2))
    t:add(F.flow_id, ctx:r(1, 3))
    t:add(F.next_hdr, ctx:r(4, 1))
    local hl_item = t:add(F.hdr_len, ctx:r(5, 1))
    t:add(F.payload_len, ctx:r(6, 2))
    t:add(F.path_type, ctx:r(8, 1))
    t:add(F.dst_type, ctx:r(9, 1))
    t:add(F.dst_len, ctx:r(9, 1))
    t:add(F.src_type, ctx:r(9, 1))
    t:add(F.src_len, ctx:r(9, 1))
    t:add(F.rsv, ctx:r(10, 2))
    local hl = tvb(5, 1):uint() * 4
    hl_item:append_text(string.format(" (%d bytes)", hl))
    local plen = tvb(6, 2):uint()
    local ptype = tvb(8, 1):uint()
    local b9 = tvb(9, 1):uint()
    local dcode, scode = math.floor(b9 / 16), b9 % 16
    local dl, sl = addr_len(dcode), addr_len(scode)
    local addr_end = 12 + 16 + dl + sl
    ctx:need(12, 16 + dl + sl, "SCION address header")
    local at = t:add(ctx:r(12, 16 + dl + sl), "Address header")
    local dia = ctx:ia(at, 12, F.dst_ia, F.dst_isd, F.dst_as)
    local sia = ctx:ia(at, 20, F.src_ia, F.src_isd, F.src_as)
    local dh = host(ctx, at, 28, dcode, F.dst_host_ipv4, F.dst_host_ipv6, F.dst_host_svc, F.dst_host_raw)
    local sh = host(ctx, at, 28 + dl, scode, F.src_host_ipv4, F.src_host_ipv6, F.src_host_svc, F.src_host_raw)
    at:append_text(string.format(": %s,%s -> %s,%s", sia, sh, dia, dh))
    root:append_text(string.format(", %s,%s -> %s,%s", sia, sh, dia, dh))
    if hl < addr_end then ctx:fail(t, string.format("HdrLen %d bytes does not cover the address header", hl)) end
    ctx:need(0, hl, "SCION path")
    path(ctx, t, ptype, addr_end, hl - addr_end)
    if not ctx.quoted then
        pinfo.cols.src = sia .. "," .. sh
        pinfo.cols.dst = dia .. "," .. dh
        pinfo.cols.info = "SCION " .. (vs_next_hdr[tvb(4, 1):uint()] or tostring(tvb(4, 1):uint()))
    end
    -- PayloadLen against the bytes present: checked before the layers above, parsed over
    -- what is there (as idint-wire does).
    local declared = hl + plen
    local mismatch = nil
    if declared ~= tvb:len() then
        mismatch = string.format("PayloadLen %d, but %d bytes follow the header", plen, tvb:len() - hl)
    end
    local end_ = math.min(declared, tvb:len())
    local body = ctx
    if end_ < tvb:len() then
        body = setmetatable({ tvb = tvb(0, end_):tvb(), quoted = ctx.quoted, root = ctx.root }, Ctx)
    end
    local ok, err = pcall(function()
        local next, off = tvb(4, 1):uint(), hl
        local seen_hbh, seen_e2e = false, false
        while next == 200 or next == 201 do
            if next == 200 and (seen_hbh or seen_e2e) or next == 201 and seen_e2e then
                body:fail(t, "Extension headers out of order")
            end
            local nh, len = extension(body, t, off, next == 200)
            if next == 200 then seen_hbh = true else seen_e2e = true end
            next, off = nh, off + len
        end
        if next == 17 then
            udp(body, t, off, pinfo)
        elseif next == 202 then
            scmp(body, t, off, pinfo)
        elseif next == 203 then
            local n = body.tvb:len() - off
            if n > 0 and not ctx.quoted and not mismatch and bfd() then
                pinfo.cols.info = "BFD/SCION"
                local called, e = pcall(function() bfd():call(body.tvb(off, n):tvb(), pinfo, t) end)
                if not called then body:fail(t, "BFD: " .. tostring(e)) end
            elseif n > 0 then
                t:add(F.payload, body:r(off, n))
            end
        else
            local n = body.tvb:len() - off
            if n > 0 then t:add(F.payload, body:r(off, n)) end
        end
    end)
    if mismatch then
        if ctx.quoted then
            t:add_proto_expert_info(ex_quote, mismatch)
        else
            t:add_proto_expert_info(ex_malformed, mismatch)
        end
    end
    if not ok then error(err) end
end

dissect_scion = function(tvb, pinfo, tree, quoted)
    local root = quoted and tree or tree:add(scion, tvb())
    local ctx = setmetatable({ tvb = tvb, quoted = quoted, root = root }, Ctx)
    local ok, err = pcall(dissect_inner, ctx, pinfo, root)
    if not ok and err ~= Malformed then
        root:add_proto_expert_info(ex_internal, "Internal error: " .. tostring(err))
    end
end

function scion.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol = "SCION"
    dissect_scion(tvb, pinfo, tree, false)
    return tvb:len()
end

-- Heuristic (off by default): a plausible common + address header.
local function heuristic(tvb, pinfo, tree)
    if not scion.prefs.heuristic or tvb:len() < 36 then return false end
    local nh = tvb(4, 1):uint()
    local ok_nh = { [6] = true, [17] = true, [200] = true, [201] = true, [202] = true, [203] = true }
    if math.floor(tvb(0, 1):uint() / 16) ~= 0 or not ok_nh[nh] or tvb(8, 1):uint() > 3 then return false end
    local b9 = tvb(9, 1):uint()
    local hl = tvb(5, 1):uint() * 4
    if hl < 28 + addr_len(math.floor(b9 / 16)) + addr_len(b9 % 16) then return false end
    if hl + tvb(6, 2):uint() ~= tvb:len() then return false end
    scion.dissector(tvb, pinfo, tree)
    return true
end

-------------------------------------------------------------------------------------------
-- Registration
-------------------------------------------------------------------------------------------

local udp_table = DissectorTable.get("udp.port")
local registered = DEFAULT_PORTS

local function each_port(range, fn)
    for part in string.gmatch(range, "[^,%s]+") do
        local a, b = string.match(part, "^(%d+)-(%d+)$")
        if a then
            for p = tonumber(a), tonumber(b) do fn(p) end
        elseif tonumber(part) then
            fn(tonumber(part))
        end
    end
end

each_port(registered, function(p) udp_table:add(p, scion) end)
udp_table:add_for_decode_as(scion)
scion:register_heuristic("udp", heuristic)

function scion.prefs_changed()
    local now = tostring(scion.prefs.ports)
    if now ~= registered then
        each_port(registered, function(p) udp_table:remove(p, scion) end)
        registered = now
        each_port(registered, function(p) udp_table:add(p, scion) end)
    end
end
