// Fuzz target for the Modbus read codec: any bytes as a TCP stream, an RTU frame and a response
// PDU to each kind of read. Decoding never reads past the input; what it accepts is exactly the
// answer asked for (the data's length follows from the request), and a TCP frame found in the
// stream re-encodes to the same bytes.
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "modbus/codec.h"
#include "modbus/tags.h"

SEEDANCE_FUZZ_TARGET(modbus_codec) {
  using namespace seedance::modbus;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string_view rest = bytes;
  for (int i = 0; i < 64; ++i) {  // a stream of frames
    auto frame = PeekTcpFrame(rest);
    if (!frame || !frame->has_value()) break;
    const auto& [adu, taken] = **frame;
    if (taken > rest.size() ||
        TcpFrame(adu.transaction, adu.unit, adu.pdu) != rest.substr(0, taken)) {
      std::abort();
    }
    rest.remove_prefix(taken);
  }
  const uint16_t count = size >= 2 ? static_cast<uint16_t>((data[0] << 8 | data[1]) % 2001 + 1) : 1;
  for (Area area :
       {Area::kCoils, Area::kDiscreteInputs, Area::kHoldingRegisters, Area::kInputRegisters}) {
    const uint16_t n = IsBitArea(area) ? count : static_cast<uint16_t>(count % 125 + 1);
    auto answer = DecodeReadResponse(area, n, bytes);
    if (answer && !answer->exception) {
      const size_t want = IsBitArea(area) ? (n + 7u) / 8u : 2u * n;
      if (answer->data.size() != want) std::abort();
      // Every tag the read could hold decodes without reading past the data.
      Tag t;
      t.area = area;
      t.type = IsBitArea(area) ? TagType::kBool : TagType::kFloat32;
      PlannedRead read{area, 0, n, {0}};
      for (uint16_t at = 0; at + TagWidth(t) <= n; at = static_cast<uint16_t>(at + 7)) {
        t.address = at;
        std::string json;
        AppendTagValueJson(DecodeTag(t, read, answer->data), json);
      }
    }
    auto pdu = CheckRtuFrame(static_cast<uint8_t>(size), bytes);
    if (pdu && pdu->size() + 3 != bytes.size()) std::abort();
  }
  return 0;
}
