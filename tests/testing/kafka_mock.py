"""librdkafka's mock Kafka cluster (tests/tools/kafka_mock, built next to the seedance binary)
in a process of its own: brokers on loopback ports, a topic replicated on all of them, and
faults injected by command (a broker down, a leader change, errors on Produce requests). No
Kafka broker is packaged for Debian; this is librdkafka's own test cluster."""
import json
import os
import subprocess

from testing.seedance_process import BIN

KAFKA_MOCK = os.path.join(os.path.dirname(BIN), "kafka_mock")

# Kafka error codes used by the tests.
NOT_LEADER_FOR_PARTITION = 6
REQUEST_TIMED_OUT = 7
MSG_SIZE_TOO_LARGE = 10


class KafkaMock:
    def __init__(self, topic="events", partitions=3, brokers=3):
        self.topic = topic
        self.proc = subprocess.Popen([KAFKA_MOCK, topic, str(partitions), str(brokers)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline().split()
        if len(first) != 2 or first[0] != "bootstraps":
            raise RuntimeError(f"kafka_mock did not start: {first}")
        self.brokers = first[1].split(",")

    def command(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if answer.startswith("error"):
            raise RuntimeError(f"kafka_mock {line}: {answer}")
        return answer

    def count(self):
        return json.loads(self.command("count"))

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.command("quit")
            except (BrokenPipeError, RuntimeError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
