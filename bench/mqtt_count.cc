// mqtt_count: subscribes to a topic filter and exits once COUNT messages have arrived; the
// fastest subscriber we can write, for the broker's pub -> sub ceiling in the benchmarks.
// mosquitto_sub formats and writes every message and acknowledges each QoS 1 message with its
// own write, so it, not the broker, is the limit it measures (17.7k msg/s at QoS 1 here, where
// Seedance takes 40k/s). This one reads 64 KiB per read (as Seedance does) and acknowledges
// all QoS 1 messages of a read with one write; like Seedance it speaks MQTT 5 with Receive
// Maximum 1024.
//
//   mqtt_count HOST PORT FILTER QOS COUNT [TIMEOUT_S]
//
// Prints "subscribed" on stdout once the broker granted the subscription, then one JSON line
// {"received": N, "seconds": S} where S runs from the first message to the last.
#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mqtt/codec.h"
#include "util/clock.h"

namespace asio = boost::asio;
namespace mqtt = seedance::mqtt;

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: mqtt_count HOST PORT FILTER QOS COUNT [TIMEOUT_S]\n");
    return 2;
  }
  const uint8_t qos = static_cast<uint8_t>(std::atoi(argv[4]));
  const uint64_t count = std::strtoull(argv[5], nullptr, 10);
  const int timeout_s = argc > 6 ? std::atoi(argv[6]) : 120;
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  boost::system::error_code ec;
  asio::connect(sock, asio::ip::tcp::resolver(io).resolve(argv[1], argv[2], ec), ec);
  if (ec) {
    std::fprintf(stderr, "mqtt_count: cannot reach the broker: %s\n", ec.message().c_str());
    return 1;
  }
  sock.set_option(asio::ip::tcp::no_delay(true), ec);
  std::string out;
  // MQTT 5 with Receive Maximum 1024, as Seedance's source subscribes: a broker's cost per
  // message depends on how many it holds in flight.
  constexpr auto kV5 = mqtt::Version::kV5;
  mqtt::Connect connect{.version = kV5,
                        .client_id = fmt::format("seedance-count-{}", seedance::util::WallNowNs())};
  connect.props.push_back({.id = mqtt::prop::kReceiveMaximum, .number = 1024});
  (void)mqtt::Encode(connect, kV5, out);
  mqtt::Subscribe subscribe{.packet_id = 1, .subscriptions = {{argv[3], qos}}};
  (void)mqtt::Encode(subscribe, kV5, out);
  asio::write(sock, asio::buffer(out), ec);

  std::string buf;
  std::vector<char> chunk(64 * 1024);
  uint64_t received = 0;
  std::chrono::steady_clock::time_point first, last;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (received < count && !ec && std::chrono::steady_clock::now() < deadline) {
    const size_t n = sock.read_some(asio::buffer(chunk), ec);
    if (ec) break;
    buf.append(chunk.data(), n);
    out.clear();
    size_t pos = 0;
    while (true) {
      auto frame = mqtt::PeekFrame(std::string_view(buf).substr(pos), 1 << 24);
      if (!frame || !frame->has_value()) break;
      const mqtt::FrameInfo f = **frame;
      const uint8_t type = f.first_byte >> 4;
      if (type == 9) {  // SUBACK
        std::printf("subscribed\n");
        std::fflush(stdout);
      } else if (type == 3) {  // PUBLISH
        const auto now = std::chrono::steady_clock::now();
        if (received == 0) first = now;
        last = now;
        ++received;
        const uint8_t msg_qos = (f.first_byte >> 1) & 3;
        if (msg_qos > 0) {
          auto head = mqtt::PeekPublishHead(
              f.first_byte, std::string_view(buf).substr(pos + f.header_size, f.remaining));
          if (head && head->has_value()) {
            mqtt::PubResponse ack{.type = mqtt::PacketType::kPuback,
                                  .packet_id = (*head)->packet_id};
            (void)mqtt::Encode(ack, kV5, out);
          }
        }
      }
      pos += f.total();
    }
    buf.erase(0, pos);
    if (!out.empty()) asio::write(sock, asio::buffer(out), ec);
  }
  std::printf("{\"received\": %llu, \"seconds\": %.4f}\n",
              static_cast<unsigned long long>(received),
              std::chrono::duration<double>(last - first).count());
  return received >= count ? 0 : 1;
}
