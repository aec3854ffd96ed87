// The receiving side of `seedance bench`: where the job's sinks deliver during a run.
//
// HttpStampReceiver: an HTTP/1.1 server on 127.0.0.1 (http/server.h on a loop thread of its
// own, keep-alive) that answers 200 to every request and records the stamps in its body.
// FileStampTailer: follows a file a file sink appends to and records the stamps of each
// complete line.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "bench/delivery_recorder.h"
#include "http/server.h"
#include "seedance/result.h"

namespace seedance::bench {

class HttpStampReceiver {
 public:
  explicit HttpStampReceiver(DeliveryRecorder& recorder);
  ~HttpStampReceiver();  // stops

  // Listens on 127.0.0.1 with an ephemeral port; returns the base URL "http://127.0.0.1:P".
  Result<std::string> Start();
  void Stop();
  uint64_t requests() const { return requests_.load(); }

 private:
  struct State;
  http::Response Receive(const http::Request& req);  // on the loop thread
  DeliveryRecorder& recorder_;
  std::atomic<uint64_t> requests_{0};
  std::unique_ptr<State> state_;
};

class FileStampTailer {
 public:
  FileStampTailer(DeliveryRecorder& recorder, std::string path);
  ~FileStampTailer();  // stops

  void Start();
  void Stop();

 private:
  void Loop();
  DeliveryRecorder& recorder_;
  std::string path_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace seedance::bench
