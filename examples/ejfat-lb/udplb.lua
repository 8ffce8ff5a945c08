-- A Wireshark dissector for the EJFAT LB header on UDP port 0x4c42, after
-- seed 000's plug-in: magic, version, protocol, then v1's tick, or v2's
-- reserved/entropy (v3's slot and port selects) and tick.
local p_udplb = Proto("udplb", "EJFAT UDP Load Balancer")
local f_magic = ProtoField.string("udplb.magic", "Magic", base.ASCII)
local f_version = ProtoField.uint8("udplb.version", "Version", base.DEC)
local f_proto = ProtoField.uint8("udplb.proto", "Protocol", base.HEX)
local f_word1 = ProtoField.uint16("udplb.word1", "Reserved / slot select", base.HEX)
local f_word2 = ProtoField.uint16("udplb.word2", "Entropy / port select", base.HEX)
local f_tick = ProtoField.uint64("udplb.tick", "Tick", base.DEC)
p_udplb.fields = { f_magic, f_version, f_proto, f_word1, f_word2, f_tick }

function p_udplb.dissector(buf, pinfo, tree)
    if buf:len() < 12 then return 0 end
    local version = buf(2, 1):uint()
    local len = (version == 1) and 12 or 16
    if buf:len() < len then return 0 end
    pinfo.cols.protocol = "UDPLB"
    local t = tree:add(p_udplb, buf(0, len))
    t:add(f_magic, buf(0, 2))
    t:add(f_version, buf(2, 1))
    t:add(f_proto, buf(3, 1))
    if version == 1 then
        t:add(f_tick, buf(4, 8))
    else
        t:add(f_word1, buf(4, 2))
        t:add(f_word2, buf(6, 2))
        t:add(f_tick, buf(8, 8))
    end
    return len
end

DissectorTable.get("udp.port"):add(0x4c42, p_udplb)
