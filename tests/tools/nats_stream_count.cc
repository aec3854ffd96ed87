// nats_stream_count: the consumer the nats sink's tests count with (Debian has no NATS client
// for Python). Reads every message of a JetStream stream through a pull consumer and prints
// one JSON line: {"stream_msgs": M, "consumed": C, "unique": U, "repeats": R} where U counts
// the distinct numbers n of the payloads {"n":n,...} and R the messages whose n was seen
// before.
//
//   nats_stream_count URL STREAM SUBJECT [TIMEOUT_S [info]]   (info: the message count only)
#include <nats/nats.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_set>

namespace {

int Fail(const char* what, natsStatus s) {
  std::fprintf(stderr, "nats_stream_count: %s: %s\n", what, natsStatus_GetText(s));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: nats_stream_count URL STREAM SUBJECT [TIMEOUT_S]\n");
    return 2;
  }
  const double timeout_s = argc > 4 ? std::atof(argv[4]) : 60;
  natsConnection* nc = nullptr;
  natsStatus s = natsConnection_ConnectTo(&nc, argv[1]);
  if (s != NATS_OK) return Fail("connect", s);
  jsCtx* js = nullptr;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = 10000;  // a cluster under load answers slowly
  if ((s = natsConnection_JetStream(&js, nc, &jo)) != NATS_OK) return Fail("jetstream", s);
  jsStreamInfo* si = nullptr;
  jsErrCode code;
  if ((s = js_GetStreamInfo(&si, js, argv[2], nullptr, &code)) != NATS_OK) {
    return Fail("stream info", s);
  }
  const uint64_t stream_msgs = si->State.Msgs;
  jsStreamInfo_Destroy(si);
  if (argc > 5 && std::strcmp(argv[5], "info") == 0) {
    std::printf("{\"stream_msgs\": %llu}\n", static_cast<unsigned long long>(stream_msgs));
    return 0;
  }
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = argv[2];
  so.Config.AckPolicy = js_AckNone;
  so.Config.DeliverPolicy = js_DeliverAll;
  natsSubscription* sub = nullptr;
  if ((s = js_PullSubscribe(&sub, js, argv[3], nullptr, nullptr, &so, &code)) != NATS_OK) {
    return Fail("subscribe", s);
  }
  std::unordered_set<long long> seen;
  uint64_t consumed = 0, repeats = 0;
  const int64_t deadline = nats_Now() + static_cast<int64_t>(timeout_s * 1000);
  while (consumed < stream_msgs && nats_Now() < deadline) {
    natsMsgList list;
    s = natsSubscription_Fetch(&list, sub, 1000, 2000, &code);
    if (s == NATS_TIMEOUT) continue;
    if (s != NATS_OK) return Fail("fetch", s);
    for (int i = 0; i < list.Count; ++i) {
      ++consumed;
      const char* data = natsMsg_GetData(list.Msgs[i]);
      const int len = natsMsg_GetDataLength(list.Msgs[i]);
      const std::string payload(data, static_cast<size_t>(len));
      const size_t at = payload.find("\"n\":");
      if (at == std::string::npos) continue;
      const long long n = std::atoll(payload.c_str() + at + 4);
      if (!seen.insert(n).second) ++repeats;
    }
    natsMsgList_Destroy(&list);
  }
  std::printf("{\"stream_msgs\": %llu, \"consumed\": %llu, \"unique\": %zu, \"repeats\": %llu}\n",
              static_cast<unsigned long long>(stream_msgs),
              static_cast<unsigned long long>(consumed), seen.size(),
              static_cast<unsigned long long>(repeats));
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return 0;
}
