// kafka_mock: librdkafka's mock Kafka cluster in a process of its own, for the kafka sink's
// tests (no Kafka broker is packaged for Debian). Starts BROKERS mock brokers with TOPIC
// (PARTITIONS partitions, replicated on every broker), prints "bootstraps HOST:PORT,..." and
// then takes one command per line on stdin, answering each with one line:
//   down B | up B            a broker stops answering / is back (ids from 1)
//   leader P B               partition P of TOPIC gets broker B as its leader
//   produce_errors N ERR     the next N Produce requests fail with error code ERR
//   rtt B MS                 broker B answers MS milliseconds late
//   count                    {"messages": M, "unique": U, "repeats": R, "keyed": K,
//                             "headers": H} read back from TOPIC (U: distinct n of payloads
//                             {"n":n,...}; K: records with a key; H: records with headers)
//   quit
//
//   kafka_mock TOPIC [PARTITIONS [BROKERS]]
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_set>

namespace {

std::string Count(const std::string& bootstraps, const std::string& topic, int partitions) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "group.id", "kafka-mock-count", err, sizeof err);
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof err);
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (c == nullptr) return std::string("{\"error\": \"") + err + "\"}";
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(c, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  std::unordered_set<long long> seen;
  long long messages = 0, repeats = 0, keyed = 0, with_headers = 0;
  int at_end = 0, idle = 0;
  while (at_end < partitions && idle < 100) {  // 100 empty polls of 100 ms: give up
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
    if (m == nullptr) {
      ++idle;
      continue;
    }
    idle = 0;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++at_end;
    } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++messages;
      if (m->key_len > 0) ++keyed;
      rd_kafka_headers_t* h = nullptr;
      if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h != nullptr &&
          rd_kafka_header_cnt(h) > 0) {
        ++with_headers;
      }
      const std::string payload(static_cast<const char*>(m->payload), m->len);
      const size_t at = payload.find("\"n\":");
      if (at != std::string::npos && !seen.insert(std::atoll(payload.c_str() + at + 4)).second) {
        ++repeats;
      }
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  std::ostringstream out;
  out << "{\"messages\": " << messages << ", \"unique\": " << seen.size()
      << ", \"repeats\": " << repeats << ", \"keyed\": " << keyed
      << ", \"headers\": " << with_headers << "}";
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kafka_mock TOPIC [PARTITIONS [BROKERS]]\n");
    return 2;
  }
  const std::string topic = argv[1];
  const int partitions = argc > 2 ? std::atoi(argv[2]) : 3;
  const int brokers = argc > 3 ? std::atoi(argv[3]) : 3;
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_t* host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (host == nullptr) {
    std::fprintf(stderr, "kafka_mock: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(host, brokers);
  if (mc == nullptr) {
    std::fprintf(stderr, "kafka_mock: cannot start the mock cluster\n");
    return 1;
  }
  rd_kafka_mock_topic_create(mc, topic.c_str(), partitions, brokers);
  const std::string bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
  std::printf("bootstraps %s\n", bootstraps.c_str());
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    std::string answer = "ok";
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (cmd == "down" || cmd == "up") {
      int b = 0;
      in >> b;
      e = cmd == "down" ? rd_kafka_mock_broker_set_down(mc, b) : rd_kafka_mock_broker_set_up(mc, b);
    } else if (cmd == "leader") {
      int p = 0, b = 0;
      in >> p >> b;
      e = rd_kafka_mock_partition_set_leader(mc, topic.c_str(), p, b);
    } else if (cmd == "produce_errors") {
      int n = 0, code = 0;
      in >> n >> code;
      for (int i = 0; i < n; ++i) {
        const auto err_code = static_cast<rd_kafka_resp_err_t>(code);
        rd_kafka_mock_push_request_errors_array(mc, 0 /* Produce */, 1, &err_code);
      }
    } else if (cmd == "rtt") {
      int b = 0, ms = 0;
      in >> b >> ms;
      e = rd_kafka_mock_broker_set_rtt(mc, b, ms);
    } else if (cmd == "count") {
      answer = Count(bootstraps, topic, partitions);
    } else if (cmd == "quit") {
      break;
    } else {
      answer = "error: unknown command " + cmd;
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) answer = std::string("error: ") + rd_kafka_err2str(e);
    std::printf("%s\n", answer.c_str());
    std::fflush(stdout);
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(host);
  return 0;
}
