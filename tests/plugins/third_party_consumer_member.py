"""A ConsumerGroupMember process whose assignor comes from whatever plugins are installed.

Run as ``python third_party_consumer_member.py BOOTSTRAP GROUP TOPIC ASSIGNOR``. It prints one
JSON line per assignment (its member id, generation and partitions) and stops when its stdin
closes, leaving the group.
"""

from __future__ import annotations

import json
import sys
import threading

from coordinator_consumer import ConsumerGroupMember


def main() -> None:
    bootstrap, group, topic, assignor = sys.argv[1:5]
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()

    def assigned(partitions: frozenset[object]) -> None:
        generation = member.generation()
        owned = sorted(partition for _topic, partition in member.assignment())
        print(json.dumps({"member_id": generation.member_id, "generation": generation.generation_id,
                          "owned": owned}), flush=True)  # fmt: skip

    member = ConsumerGroupMember(
        group, bootstrap, topics=[topic], assignor=assignor, on_partitions_assigned=assigned,
        session_timeout_ms=6000, heartbeat_interval_ms=500, client_id="third-party",
    )  # fmt: skip
    with member:
        while not stop.is_set():
            member.poll(timeout=0.2)


if __name__ == "__main__":
    main()
