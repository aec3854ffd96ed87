// mqtt_load: publishes stamped JSON readings to an MQTT broker as fast as allowed (QoS 1,
// a window of unacknowledged messages) or at a fixed rate, using Seedance's own codec over a
// blocking socket. For benchmarks only.
//
//   mqtt_load HOST PORT COUNT RATE(0 = as fast as possible) [WINDOW]
//
// Each payload: {"id":N,"device":"dN","temperature":T,"sent_ns":UNIX_NS}. Prints one JSON line.
#include <utility>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "mqtt/codec.h"

namespace asio = boost::asio;
using namespace seedance::mqtt;

static int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: mqtt_load HOST PORT COUNT RATE [WINDOW]\n");
    return 2;
  }
  const std::string host = argv[1], port = argv[2];
  const long count = std::atol(argv[3]);
  const double rate = std::atof(argv[4]);
  const long window = argc > 5 ? std::atol(argv[5]) : 1000;
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  asio::connect(sock, asio::ip::tcp::resolver(io).resolve(host, port));
  sock.set_option(asio::ip::tcp::no_delay(true));
  std::string out;
  (void)Encode(
      Connect{.version = Version::kV311, .client_id = fmt::format("mqtt-load-{}", NowNs())},
      Version::kV311, out);
  asio::write(sock, asio::buffer(out));
  std::atomic<long> acked{0};
  std::atomic<bool> connected{false};
  std::thread reader([&] {
    std::string buf;
    char chunk[65536];
    boost::system::error_code ec;
    while (acked.load() < count) {
      size_t n = sock.read_some(asio::buffer(chunk), ec);
      if (ec) return;
      buf.append(chunk, n);
      size_t pos = 0;
      while (true) {
        auto f = PeekFrame(std::string_view(buf).substr(pos), 1 << 20);
        if (!f || !f->has_value()) break;
        uint8_t type = (*f)->first_byte >> 4;
        if (type == 2) connected = true;
        if (type == 4) acked.fetch_add(1);
        pos += (*f)->total();
      }
      buf.erase(0, pos);
    }
  });
  while (!connected.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto start = std::chrono::steady_clock::now();
  const int64_t start_ns = NowNs();
  for (long i = 0; i < count; ++i) {
    if (rate > 0) {
      auto due = start + std::chrono::nanoseconds(static_cast<int64_t>(i * 1e9 / rate));
      std::this_thread::sleep_until(due);
    }
    while (i - acked.load() >= window) std::this_thread::yield();
    out.clear();
    double t = -60 + (i * 7919 % 2100) / 10.0;
    Publish p{
        .topic = fmt::format("sensor/d{}/temperature", i % 100),
        .payload = fmt::format("{{\"id\":{},\"device\":\"d{}\",\"temperature\":{},\"sent_ns\":{}}}",
                               i, i % 100, t, NowNs()),
        .qos = 1,
        .packet_id = static_cast<uint16_t>(i % 65535 + 1)};
    (void)Encode(p, Version::kV311, out);
    asio::write(sock, asio::buffer(out));
  }
  while (acked.load() < count) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  double secs = (NowNs() - start_ns) / 1e9;
  std::printf("{\"published\": %ld, \"seconds\": %.3f, \"publish_rate\": %.0f}\n", count, secs,
              count / secs);
  sock.close();
  reader.join();
  return 0;
}
