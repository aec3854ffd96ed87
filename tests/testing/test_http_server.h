// TestHttpServer: a real HTTP/1.1 server on 127.0.0.1 for C++ tests of HTTP clients (the
// HTTP sink): keep-alive, a thread per connection, and a responder the test scripts — any
// status, a Retry-After, or no answer at all (the request hangs until the client gives up).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace seedance::testing {

struct TestHttpReply {
  unsigned status = 200;
  std::string retry_after;  // the header, when not empty
  bool hang = false;        // never answer; wait for the client to close
  std::string body;         // the answer's body ("scripted refusal" for an error when empty)
  // When set: the header claims a body of this many bytes, `body` is sent, and the connection
  // is closed (a server that lies about its answer, or dies in the middle of it).
  uint64_t claimed_length = 0;
};

class TestHttpServer {
 public:
  // Called on a connection's thread for each request, with its body and the request's number
  // (from 1, across connections).
  using Responder = std::function<TestHttpReply(const std::string& body, int request)>;

  explicit TestHttpServer(Responder responder);
  ~TestHttpServer();  // stops

  // "http://127.0.0.1:PORT/ingest"
  std::string url() const;
  int requests() const { return requests_.load(); }
  // Connections still open: each has its own thread, which answers the requests read on it
  // and ends once the client closes. 0 after a client closed its connections means every
  // request it sent has been answered (or refused).
  int open_connections() const { return open_.load(); }
  // Waits until no connection is open and none is waiting in the listen queue to be accepted:
  // once a client has closed its connections, every request it sent has been answered (or
  // refused), and none can still be read. false at the timeout.
  bool WaitUntilIdle(std::chrono::milliseconds timeout);
  // Bodies of the requests answered 2xx, in the order they were answered.
  std::vector<std::string> accepted() const;
  void SetResponder(Responder responder);
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<int> requests_{0};
  std::atomic<int> open_{0};
};

}  // namespace seedance::testing
