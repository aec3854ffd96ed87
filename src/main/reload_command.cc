// `seedance reload`: POST /reload on the metrics listener (core/pipeline_host.h does the
// reload), then GET /reload until the reload count moves, and say how it went.
#include <fmt/format.h>
#include <rapidjson/document.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "http/fetch.h"
#include "main/commands.h"
#include "util/units.h"

namespace seedance::cli {
namespace {

struct ReloadState {
  uint64_t generation = 0;
  uint64_t reloads = 0;  // ok + failed
  std::string result, error;
  std::vector<std::string> changes;
};

Result<ReloadState> ReadState(const std::string& body) {
  rapidjson::Document d;
  d.Parse(body.data(), body.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("reloads") || !d.HasMember("last")) {
    return InvalidArgumentError("not a reload state: " + body.substr(0, 200));
  }
  ReloadState s;
  s.generation = d["generation"].GetUint64();
  s.reloads = d["reloads"]["ok"].GetUint64() + d["reloads"]["failed"].GetUint64();
  s.result = d["last"]["result"].GetString();
  s.error = d["last"]["error"].GetString();
  for (const auto& c : d["last"]["changes"].GetArray()) s.changes.emplace_back(c.GetString());
  return s;
}

}  // namespace

int Reload(const ReloadOptions& o) {
  auto timeout = util::ParseDuration(o.timeout);
  if (!timeout) {
    std::cerr << "--timeout: " << timeout.error().message() << "\n";
    return kExitConfig;
  }
  std::string token = o.token;
  if (const char* env = std::getenv("SEEDANCE_TOKEN"); token.empty() && env != nullptr) {
    token = env;
  }
  const std::string auth = token.empty() ? "" : "Bearer " + token;
  std::string url = o.url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/reload";
  auto ask = [&](const char* method) -> Result<ReloadState> {
    auto reply =
        http::Fetch(method, url, "", "text/plain", std::chrono::seconds(10), 1 << 20, auth);
    if (!reply) return reply.error();
    if (reply->status / 100 != 2) {
      return Status(reply->status == 401 || reply->status == 403 ? StatusCode::kInvalidArgument
                                                                 : StatusCode::kUnavailable,
                    fmt::format("{} {}: HTTP {}: {}", method, url, reply->status, reply->body));
    }
    return ReadState(reply->body);
  };
  auto before = ask("POST");
  if (!before) {
    std::cerr << before.error().message() << "\n";
    return before.error().code() == StatusCode::kInvalidArgument ? kExitConfig : kExitRuntime;
  }
  const auto deadline = std::chrono::steady_clock::now() + *timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto now = ask("GET");
    if (!now) continue;  // the listener may be moving to a new address
    if (now->reloads <= before->reloads) continue;
    if (now->result == "ok") {
      std::cout << fmt::format("reloaded: generation {}{}\n", now->generation,
                               now->changes.empty()
                                   ? ", nothing changed"
                                   : fmt::format(" ({})", fmt::join(now->changes, ", ")));
      return kExitOk;
    }
    std::cout << fmt::format("reload refused, the running configuration stays: {}\n", now->error);
    return kExitRuntime;
  }
  std::cerr << fmt::format("no reload outcome within {}\n", o.timeout);
  return kExitRuntime;
}

}  // namespace seedance::cli
