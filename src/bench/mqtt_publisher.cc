#include "bench/mqtt_publisher.h"

#include <utility>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <thread>

#include "mqtt/codec.h"
#include "util/clock.h"

namespace seedance::bench {
namespace asio = boost::asio;

struct MqttPublisher::Socket {
  asio::io_context io;
  asio::ip::tcp::socket sock{io};
  std::thread reader;
};

MqttPublisher::MqttPublisher(PublisherOptions options)
    : options_(std::move(options)), socket_(std::make_unique<Socket>()) {}

MqttPublisher::~MqttPublisher() {
  boost::system::error_code ec;
  socket_->sock.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_->sock.close(ec);
  if (socket_->reader.joinable()) socket_->reader.join();
}

Result<std::unique_ptr<MqttPublisher>> MqttPublisher::Connect(PublisherOptions options) {
  std::unique_ptr<MqttPublisher> p(new MqttPublisher(std::move(options)));
  const PublisherOptions& o = p->options_;
  boost::system::error_code ec;
  auto endpoints = asio::ip::tcp::resolver(p->socket_->io).resolve(o.host, o.port, ec);
  if (!ec) asio::connect(p->socket_->sock, endpoints, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot reach the broker {}:{}: {}", o.host, o.port, ec.message()));
  }
  p->socket_->sock.set_option(asio::ip::tcp::no_delay(true), ec);
  std::string out;
  mqtt::Connect connect{.version = mqtt::Version::kV311,
                        .client_id = fmt::format("seedance-bench-{}", util::WallNowNs()),
                        .username = o.username,
                        .password = o.password};
  if (Status s = mqtt::Encode(connect, mqtt::Version::kV311, out); !s.ok()) return s;
  asio::write(p->socket_->sock, asio::buffer(out), ec);
  if (ec) return Status(StatusCode::kUnavailable, "broker closed the connection: " + ec.message());
  MqttPublisher* raw = p.get();
  p->socket_->reader = std::thread([raw] { raw->ReadLoop(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!p->connected_.load() && !p->failed_.load() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!p->connected_.load()) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("broker {}:{} did not accept the connection", o.host, o.port));
  }
  return p;
}

void MqttPublisher::ReadLoop() {
  std::string buf;
  char chunk[65536];
  boost::system::error_code ec;
  while (true) {
    size_t n = socket_->sock.read_some(asio::buffer(chunk), ec);
    if (ec) {
      failed_ = true;
      return;
    }
    buf.append(chunk, n);
    size_t pos = 0;
    while (true) {
      auto frame = mqtt::PeekFrame(std::string_view(buf).substr(pos), 1 << 20);
      if (!frame || !frame->has_value()) break;
      const uint8_t type = (*frame)->first_byte >> 4;
      if (type == 2) {  // CONNACK: byte 2 of the variable header is the return code
        const bool accepted = (*frame)->remaining >= 2 && buf[pos + (*frame)->header_size + 1] == 0;
        (accepted ? connected_ : failed_) = true;
      } else if (type == 4) {  // PUBACK
        acked_.fetch_add(1, std::memory_order_relaxed);
      }
      pos += (*frame)->total();
    }
    buf.erase(0, pos);
  }
}

Result<uint64_t> MqttPublisher::Run(const std::atomic<bool>& stop) {
  const PublisherOptions& o = options_;
  const auto start = std::chrono::steady_clock::now();
  const auto end =
      o.duration.count() > 0 ? start + o.duration : std::chrono::steady_clock::time_point::max();
  std::string out;
  boost::system::error_code ec;
  for (uint64_t i = 0; o.count == 0 || i < o.count; ++i) {
    if (stop.load(std::memory_order_relaxed) || failed_.load()) break;
    if (o.rate > 0) {
      auto due = start + std::chrono::nanoseconds(static_cast<int64_t>(i * 1e9 / o.rate));
      if (due >= end) break;
      std::this_thread::sleep_until(due);
    } else if (std::chrono::steady_clock::now() >= end) {
      break;
    }
    if (o.qos > 0) {
      while (i - acked_.load(std::memory_order_relaxed) >= o.window && !failed_.load() &&
             !stop.load(std::memory_order_relaxed)) {
        std::this_thread::yield();
      }
    }
    out.clear();
    mqtt::Publish publish{.topic = o.topic,
                          .payload = o.make_payload(i, util::WallNowNs()),
                          .qos = static_cast<uint8_t>(o.qos),
                          .packet_id = static_cast<uint16_t>(o.qos > 0 ? i % 65535 + 1 : 0)};
    if (Status s = mqtt::Encode(publish, mqtt::Version::kV311, out); !s.ok()) return s;
    asio::write(socket_->sock, asio::buffer(out), ec);
    if (ec) break;
    published_.fetch_add(1, std::memory_order_relaxed);
  }
  const uint64_t sent = published_.load();
  if (o.qos > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (acked_.load() < sent && !failed_.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (failed_.load() || ec) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("connection to the broker lost after {} message(s)", sent));
  }
  return o.qos > 0 ? acked_.load() : sent;
}

}  // namespace seedance::bench
