#include "mqtt/packet_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "mqtt/codec.h"
#include "util/scratch_buffer.h"
#include "util/strings.h"

namespace seedance::mqtt {

namespace {

bool ValidTopicName(std::string_view topic) {
  if (topic.find('\0') != std::string_view::npos) return false;
  if (topic.find_first_of("+#") != std::string_view::npos) return false;
  return util::IsValidUtf8(topic);
}

}  // namespace

void PacketReader::Reset() {
  bytes_.clear();
  pos_ = 0;
  skip_bytes_ = 0;
  invalid_.clear();
  util::ReleaseIfLarger(bytes_);
}

void PacketReader::Append(const char* data, size_t n) {
  const size_t skipped = std::min(n, skip_bytes_);
  skip_bytes_ -= skipped;
  bytes_.append(data + skipped, n - skipped);
}

Result<bool> PacketReader::Next() {
  invalid_.clear();
  std::string_view avail(bytes_.data() + pos_, bytes_.size() - pos_);
  auto frame = PeekFrame(avail, max_packet_size_);
  const bool is_publish =
      !avail.empty() &&
      static_cast<PacketType>(static_cast<uint8_t>(avail[0]) >> 4) == PacketType::kPublish;
  size_t consumed = 0;
  if (!frame && frame.error().code() == StatusCode::kResourceExhausted && is_publish) {
    // Too large to take: read its head, skip the rest as it arrives (never buffered), and
    // hand it on as a message that cannot be taken, so it is acknowledged, not redelivered
    // for ever (MQTT 3.1.1 cannot tell the broker our limit).
    auto fixed = PeekFixedHeader(avail);
    if (!fixed) return fixed.error();
    const FrameInfo f = **fixed;
    auto head = PeekPublishHead(f.first_byte, avail.substr(f.header_size));
    if (!head) return head.error();
    if (!head->has_value()) return false;  // the topic is still coming (at most 64 KiB)
    consumed = std::min(avail.size(), f.total());
    skip_bytes_ = f.total() - consumed;
    if (!std::holds_alternative<Publish>(packet_)) packet_ = Publish{};
    Publish& pub = std::get<Publish>(packet_);
    pub.topic = std::move((*head)->topic);
    pub.qos = (*head)->qos;
    pub.packet_id = (*head)->packet_id;
    pub.payload.clear();
    pub.props.clear();
    pub.dup = (f.first_byte & 0x08) != 0;
    pub.retain = (f.first_byte & 1) != 0;
    invalid_ = fmt::format("message of {} bytes exceeds max_packet_size ({} bytes)", f.total(),
                           max_packet_size_);
  } else {
    if (!frame) return frame.error();
    if (!frame->has_value()) return false;
    const FrameInfo& f = **frame;
    const std::string_view body = avail.substr(f.header_size, f.remaining);
    Status decoded;
    if (is_publish) {
      // Into the Publish already there: its strings keep their storage from packet to packet.
      if (!std::holds_alternative<Publish>(packet_)) packet_ = Publish{};
      Publish& pub = std::get<Publish>(packet_);
      decoded = DecodePublishInto(f.first_byte, body, version_, &pub);
      if (!decoded.ok()) {
        // Undecodable, but with a readable head: one bad message, acknowledged and reported.
        auto head = PeekPublishHead(f.first_byte, body);
        if (head && head->has_value()) {
          pub.topic = std::move((*head)->topic);
          pub.qos = (*head)->qos;
          pub.packet_id = (*head)->packet_id;
          pub.payload.clear();
          pub.props.clear();
          invalid_ = decoded.message();
          decoded = Status::Ok();
        }
      } else {
        invalid_ = CheckPublish(pub);
        if (!invalid_.empty()) pub.payload.clear();
      }
    } else {
      Result<Packet> p = Decode(f.first_byte, body, version_);
      if (p)
        packet_ = std::move(*p);
      else
        decoded = p.error();
    }
    consumed = f.total();
    if (!decoded.ok()) return decoded;
  }
  pos_ += consumed;
  if (pos_ == bytes_.size()) {
    bytes_.clear();
    pos_ = 0;
    util::ReleaseIfLarger(bytes_);  // a large packet's bytes are in packet_ now
  } else if (pos_ > 65536) {
    bytes_.erase(0, pos_);
    pos_ = 0;
    util::ReleaseIfLarger(bytes_);
  }
  return true;
}

std::string PacketReader::CheckPublish(const Publish& p) {
  if (p.topic.empty()) {
    if (FindProperty(p.props, prop::kTopicAlias) != nullptr) {
      return "PUBLISH uses a topic alias, which was never negotiated (Seedance allows none)";
    }
    return "PUBLISH without a topic name";
  }
  if (!ValidTopicName(p.topic)) {
    return "topic name is not valid UTF-8, or holds U+0000 or a wildcard";
  }
  return std::string();
}

}  // namespace seedance::mqtt
