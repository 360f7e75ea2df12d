"""Kafka's sticky and cooperative-sticky assignors: O(P + M log M) for P partitions and M members
with identical subscriptions (different subscriptions add a search over subscription classes).

The semantics are those of Kafka's ``StickyAssignor`` and ``CooperativeStickyAssignor``
(``AbstractStickyAssignor``): the assignment is balanced first and sticky second, and the
previous assignment is read from the members' owned-partition claims after KIP-792's trust rules.
The algorithm is not Kafka's: Kafka's general case moves partitions one at a time with an
O(P * M) balance check, which takes seconds for a thousand members; this one works on counts.

How an assignment is built (the module's private engine, shared with ``_uniform.py``):

1. **Trust.** :func:`~coordinator_consumer._ownership.owned_partitions` keeps, for each
   partition, only the claim made in the highest generation; two claims in that generation
   cancel out; claims on topics the claimant no longer subscribes to are then dropped.
2. **Classes.** Members with the same effective subscription (subscribed topics that have
   partitions) form a class; with identical subscriptions there is one class.
3. **Counts per class** (only with two or more classes). Each class first holds the partitions its
   members own; the rest of each topic is poured into its subscribing classes, lowest member load
   first ("water-filling"). Then, while some class could pass a partition, directly or along a
   chain of classes each handing one on, to a class whose least loaded member has at least two
   fewer partitions than the giver's most loaded member, it does so along the shortest such
   chain. When no chain is left the member loads are as balanced as possible: no
   reassignment of any number of partitions can lower the sum of squared loads, so in particular
   max - min <= 1 whenever the subscriptions allow it (the criterion of Kafka's sticky assignor).
4. **Quotas.** A class holding ``X`` partitions for ``n`` members gives each ``X // n``, and one
   more to ``X % n`` of them: those that own the most, ties to the lower member id. That choice
   minimises the partitions taken from their owners.
5. **Keep, then fill.** Each member keeps its owned partitions (lowest first) up to its quota (and,
   with several classes, within its class's share of each topic). The partitions left over are
   handed to members with room, in member-id order: round robin for the sticky assignors (each
   member gets every n-th free partition, as Kafka's ``constrainedAssign``), contiguous runs for
   the uniform assignor (as Kafka's ``UniformHomogeneousAssignmentBuilder``).

Rack-aware mode is described in :func:`assign_sticky`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import accumulate, chain, compress, pairwise, repeat
from operator import attrgetter
from typing import cast

from coordinator_consumer._model import Assignment, Cluster, Subscription, TopicPartition
from coordinator_consumer._ownership import trusted_owned
from coordinator_consumer._racks import use_rack_aware_assignment

__all__ = ["assign_cooperative_sticky", "assign_sticky"]

_MEMBER_ID = attrgetter("member_id")


def assign_sticky(
    subscriptions: Sequence[Subscription], cluster: Cluster, *, rack_aware: bool | None = None
) -> Assignment:
    """Assign partitions as Kafka's ``StickyAssignor`` does: balanced first, then sticky.

    * **Balanced.** With identical subscriptions every member gets ``P // M`` or ``P // M + 1`` of
      the ``P`` partitions. Otherwise the loads are as balanced as the subscriptions allow: no
      partition can be passed, even along a chain of members, from a member to one with two or
      more fewer partitions.
    * **Sticky.** Each member keeps as many of its trusted owned partitions (see
      :func:`~coordinator_consumer._ownership.owned_partitions`) as the balance allows; with
      identical subscriptions exactly
      ``sum(max(0, owned - quota))`` partitions change hands, the minimum.
    * **Deterministic.** The result depends on the members' ids, subscriptions, claims, racks and
      the cluster, never on the order of ``subscriptions`` or of a member's ``owned``.

    **Rack-aware mode** (KIP-881). By default (``rack_aware=None``) it is on when Kafka's rule
    says racks help (:mod:`coordinator_consumer._racks`: some member has a non-empty rack, it meets
    the replica racks in ``cluster.replica_racks``, and not every partition has the same racks);
    ``rack_aware=True`` turns it on whenever the members' and replicas' racks meet;
    ``rack_aware=False`` ignores racks. A member *matches* a
    partition when the member's rack is one of the partition's replica racks; a member without a
    rack, or a partition without known racks, is neutral (neither matched nor mismatched). The
    rule, in priority order:

    1. Balance comes first: each member's count is exactly what it is without racks.
    2. A member keeps the owned partitions it matches or is neutral to, as stickiness allows.
    3. Partitions that need a new member (unowned, or beyond their owner's quota) go to a
       matching member with room when there is one, partitions with the fewest replica racks
       first; among the racks, the one whose members have the most room left.
    4. An owned partition whose owner is in another rack than all its replicas moves to a
       matching member if one still has room after step 3 (rack locality over stickiness,
       as Kafka's KIP-881 assignors); otherwise it stays with its owner if the owner has room.
    5. Whatever is left is handed out as without racks.

    Worked example: three members, two topics of two partitions, nothing owned yet::

        >>> subs = [Subscription(member_id=m, topics=frozenset({"t0", "t1"})) for m in "abc"]
        >>> fresh = assign_sticky(subs, Cluster(partitions={"t0": 2, "t1": 2}))
        >>> {m: [f"{tp.topic}-{tp.partition}" for tp in tps] for m, tps in fresh.items()}
        {'a': ['t0-0', 't1-1'], 'b': ['t0-1'], 'c': ['t1-0']}

    ``b`` leaves; ``a`` and ``c`` keep what they own and share ``b``'s partition::

        >>> subs = [Subscription(member_id=m, topics=frozenset({"t0", "t1"}), owned=fresh[m],
        ...                      generation=1) for m in "ac"]
        >>> again = assign_sticky(subs, Cluster(partitions={"t0": 2, "t1": 2}))
        >>> {m: [f"{tp.topic}-{tp.partition}" for tp in tps] for m, tps in again.items()}
        {'a': ['t0-0', 't1-1'], 'c': ['t0-1', 't1-0']}

    :param subscriptions: one per member of the generation being assigned.
    :param cluster: partition counts, and replica racks for rack-aware mode.
    :param rack_aware: ``None`` for Kafka's rule, ``True`` or ``False`` to force it, as above.
    :returns: member id -> its partitions, sorted; every member is a key.
    :raises ValueError: when two subscriptions carry the same member id.
    """
    return _balanced_sticky(subscriptions, cluster, rack_aware=rack_aware, spread=True, cooperative=False)


def assign_cooperative_sticky(
    subscriptions: Sequence[Subscription], cluster: Cluster, *, rack_aware: bool | None = None
) -> Assignment:
    """Assign partitions as Kafka's ``CooperativeStickyAssignor`` does (KIP-429).

    The target is :func:`assign_sticky`'s, but a partition that would move from member A to
    member B is left out of B's assignment in this round: A, no longer assigned it, revokes it
    and rejoins, and the next round, where nobody claims it any more, gives it to B. So no
    partition is owned by two members at once. A partition is held back from B when another
    member's claim on it is trusted, or when another member claims it in the highest generation
    anyone claims it in (two such claims cancel each other's trust, but either claimant may still
    be consuming it); claims from older generations (zombies) hold nothing back.

    >>> cluster = Cluster(partitions={"t0": 4})
    >>> a = Subscription(member_id="a", topics=frozenset({"t0"}), generation=3,
    ...                  owned=tuple(TopicPartition("t0", p) for p in range(4)))
    >>> b = Subscription(member_id="b", topics=frozenset({"t0"}))
    >>> first = assign_cooperative_sticky([a, b], cluster)
    >>> [tp.partition for tp in first["a"]], first["b"]
    ([0, 1], ())
    >>> a = Subscription(member_id="a", topics=frozenset({"t0"}), owned=first["a"], generation=4)
    >>> b = Subscription(member_id="b", topics=frozenset({"t0"}), owned=first["b"], generation=4)
    >>> sorted(tp.partition for tp in assign_cooperative_sticky([a, b], cluster)["b"])
    [2, 3]

    :param subscriptions: one per member of the generation being assigned.
    :param cluster: partition counts, and replica racks for rack-aware mode.
    :param rack_aware: as in :func:`assign_sticky`.
    :returns: member id -> its partitions this round, sorted; every member is a key.
    :raises ValueError: when two subscriptions carry the same member id.
    """
    return _balanced_sticky(subscriptions, cluster, rack_aware=rack_aware, spread=True, cooperative=True)


# --------------------------------------------------------------------------------------------
# The engine. Partitions are numbered 0..P-1 (topics in name order, then partition number) and
# members 0..M-1 (member-id order); all the work is on these integers and on counts.
# --------------------------------------------------------------------------------------------

_FLIP = bytes.maketrans(b"\x00\x01", b"\x01\x00")


def _balanced_sticky(
    subscriptions: Sequence[Subscription],
    cluster: Cluster,
    *,
    rack_aware: bool | None,
    spread: bool,
    cooperative: bool,
) -> Assignment:
    """Balanced, sticky assignment: the shared engine of the sticky and uniform assignors.

    :param spread: hand free partitions out round robin (True) or in contiguous runs (False).
    :param cooperative: leave out partitions another member may still own (see
        :func:`assign_cooperative_sticky`).
    """
    members = sorted(subscriptions, key=_MEMBER_ID)
    n_members = len(members)
    if not n_members:
        return {}
    ids = [s.member_id for s in members]
    if len(set(ids)) != n_members:
        twice = sorted({m for m, nxt in pairwise(ids) if m == nxt})
        raise ValueError(
            f"members {twice} have two subscriptions each; each member of a generation has exactly "
            "one: pass the subscriptions of a single JoinGroup round"
        )

    # Topics anybody subscribes to that have partitions, in name order; classes of members.
    counts = cluster.partitions
    by_raw: dict[frozenset[str], list[int]] = {}
    for index, s in enumerate(members):
        by_raw.setdefault(s.topics, []).append(index)
    effective = {raw: sorted(t for t in raw if counts.get(t, 0) > 0) for raw in by_raw}
    topic_names = sorted(set(chain.from_iterable(effective.values())))
    topic_index = {t: k for k, t in enumerate(topic_names)}
    sizes = [counts[t] for t in topic_names]
    bases = [0, *accumulate(sizes)]
    total = bases[-1]
    base_of = dict(zip(topic_names, bases, strict=False))  # bases has one more
    size_of = dict(zip(topic_names, sizes, strict=True))

    class_of_key: dict[tuple[int, ...], int] = {}
    class_members: list[list[int]] = []
    class_topics: list[tuple[int, ...]] = []
    for raw, indices in by_raw.items():  # in order of each class's first member: deterministic
        key = tuple(topic_index[t] for t in effective[raw])
        c = class_of_key.get(key)
        if c is None:
            c = class_of_key[key] = len(class_members)
            class_members.append([])
            class_topics.append(key)
        class_members[c].extend(indices)
    if len(by_raw) != len(class_members):
        for group in class_members:
            group.sort()
    n_classes = len(class_members)
    member_class = [0] * n_members
    for c, group in enumerate(class_members):
        for i in group:
            member_class[i] = c
    topic_classes: list[list[int]] = [[] for _ in sizes]
    for c, topics in enumerate(class_topics):
        for t in topics:
            topic_classes[t].append(c)

    # Trusted ownership as partition numbers; tp_at keeps the caller's objects for the output.
    trusted = trusted_owned(members)  # only of subscribed topics; member ids checked above
    tp_at: list[TopicPartition | None] = [None] * total
    owner = [-1] * total
    owned: list[list[int]] = []
    for i, claim in enumerate(trusted):
        numbers: list[int] = []
        for tp in claim:
            topic = tp.topic
            b = base_of.get(topic)
            if b is not None and 0 <= tp.partition < size_of[topic]:
                g = b + tp.partition
                numbers.append(g)
                tp_at[g] = tp
                owner[g] = i
        numbers.sort()
        owned.append(numbers)

    topic_of: list[int] = []
    if n_classes > 1:
        topic_of = _topic_of(sizes)

    # Partitions per class (step 3) and quotas per member (step 4).
    if n_classes == 1:
        class_total = [total]
        share: list[dict[int, int]] = []
    else:
        share = _class_shares(class_members, class_topics, topic_classes, sizes, owned, topic_of)
        class_total = [0] * n_classes
        for held in share:
            for c, x in held.items():
                class_total[c] += x
    quota = [0] * n_members
    for c, group in enumerate(class_members):
        q, r = divmod(class_total[c], len(group))
        for i in group:
            quota[i] = q
        if r:  # to the r members that own the most, ties to the lower member id
            most_first = sorted(zip([-len(owned[i]) for i in group], group, strict=True))
            for _, i in most_first[:r]:
                quota[i] = q + 1

    # Racks, when known on both sides and Kafka's rule (or ``rack_aware=True``) says they help.
    member_rack: list[str | None] = [s.rack or None for s in members]
    racks_of: dict[int, frozenset[str]] = {}
    if rack_aware is not False and any(member_rack):
        for tp, racks in cluster.replica_racks.items():
            b = base_of.get(tp.topic)
            if b is not None and racks and 0 <= tp.partition < size_of[tp.topic]:
                racks_of[b + tp.partition] = frozenset(racks)
        partition_racks = list(racks_of.values())
        if len(racks_of) < total:  # some partitions have no racks: they count as an empty set
            partition_racks.append(frozenset())
        if not use_rack_aware_assignment({r for r in member_rack if r}, partition_racks, rack_aware):
            racks_of = {}
        elif not topic_of:
            topic_of = _topic_of(sizes)

    # Keep (step 5). need[c][t]: partitions of topic t class c still has to receive.
    need: list[dict[int, int]] = []
    if n_classes > 1:
        need = [{t: share[t].get(c, 0) for t in class_topics[c]} for c in range(n_classes)]
    taken = bytearray(total)
    kept: list[list[int]] = [[] for _ in members]
    room = [0] * n_members
    mismatched: list[int] = []  # owned partitions whose owner is in no rack of their replicas
    for c, group in enumerate(class_members):
        keepable: dict[int, list[int]] = {}
        for i in group:
            rack = member_rack[i]
            if racks_of and rack is not None:
                near: list[int] = []
                for g in owned[i]:
                    replicas = racks_of.get(g)
                    if replicas is None or rack in replicas:
                        near.append(g)
                    else:
                        mismatched.append(g)
                keepable[i] = near
            else:
                keepable[i] = owned[i]
        if need:
            _keep_within_shares(group, keepable, quota, need[c], topic_of, kept)
        else:
            for i in group:
                kept[i] = keepable[i][: quota[i]]
        for i in group:
            keeping = kept[i]
            room[i] = quota[i] - len(keeping)
            for g in keeping:
                taken[g] = 1

    added: list[list[int]] = [[] for _ in members]
    if racks_of:
        _place_by_rack(
            taken,
            mismatched,
            racks_of,
            member_rack,
            class_members,
            member_class,
            topic_classes,
            topic_of,
            owner,
            room,
            need,
            added,
        )

    # Fill (step 5): the partitions nobody keeps, to the members with room.
    free = list(compress(range(total), bytes(taken).translate(_FLIP)))
    if n_classes == 1:
        _fill(class_members[0], room, free, added, spread)
    else:
        pools: list[list[int]] = [[] for _ in class_members]
        takers = [[c for c in topic_classes[t] if need[c][t] > 0] for t in range(len(sizes))]
        cursor = [0] * len(sizes)
        for g in free:
            t = topic_of[g]
            c = takers[t][cursor[t]]
            pools[c].append(g)
            wanted = need[c]
            wanted[t] -= 1
            if not wanted[t]:
                cursor[t] += 1
        for c, group in enumerate(class_members):
            _fill(group, room, pools[c], added, spread)

    if cooperative:
        _hold_back_moving(members, trusted, owner, base_of, size_of, added)

    # Output: the callers' TopicPartition objects where they gave one, new ones elsewhere.
    for k, topic in enumerate(topic_names):
        b, n = bases[k], sizes[k]
        missing = owner[b : b + n].count(-1)
        if missing == n:
            tp_at[b : b + n] = map(TopicPartition, repeat(topic, n), range(n))
        elif missing:  # found by index, not by a look at every partition: few are new
            g = b - 1
            for _ in range(missing):
                g = owner.index(-1, g + 1, b + n)
                tp_at[g] = TopicPartition(topic, g - b)
    objects = cast("list[TopicPartition]", tp_at).__getitem__
    assignment: Assignment = {}
    for i, s in enumerate(members):
        final = kept[i] + added[i]
        final.sort()
        assignment[s.member_id] = tuple(map(objects, final))
    return assignment


def _topic_of(sizes: list[int]) -> list[int]:
    """Partition number -> topic number."""
    return list(chain.from_iterable(repeat(k, n) for k, n in enumerate(sizes)))


def _class_shares(
    class_members: list[list[int]],
    class_topics: list[tuple[int, ...]],
    topic_classes: list[list[int]],
    sizes: list[int],
    owned: list[list[int]],
    topic_of: list[int],
) -> list[dict[int, int]]:
    """How many partitions of each topic each class gets: topic -> {class: count > 0}.

    Each class starts with what its members own; each topic's other partitions are poured into
    its subscribing classes, lowest member load first, topics with the most partitions per
    subscriber first (as Kafka's ``UniformHeterogeneousAssignmentBuilder`` orders them); then
    :func:`_balance_classes` removes every imbalance a chain of hand-overs can remove.
    """
    n = [len(group) for group in class_members]
    load = [0] * len(class_members)
    share: list[dict[int, int]] = [{} for _ in sizes]
    for c, group in enumerate(class_members):
        for i in group:
            for g in owned[i]:
                held = share[topic_of[g]]
                held[c] = held.get(c, 0) + 1
            load[c] += len(owned[i])
    readers = [sum(n[c] for c in topic_classes[t]) for t in range(len(sizes))]
    order = sorted(range(len(sizes)), key=lambda t: (-sizes[t] / readers[t], readers[t], t))
    for t in order:
        units = sizes[t] - sum(share[t].values())
        if units:
            _pour(units, topic_classes[t], share[t], load, n)
    _balance_classes(share, load, n, class_topics)
    return share


def _pour(units: int, classes: list[int], held: dict[int, int], load: list[int], n: list[int]) -> None:
    """Give ``units`` partitions of one topic to ``classes``, raising the lowest member loads first."""
    if len(classes) == 1:
        c = classes[0]
        held[c] = held.get(c, 0) + units
        load[c] += units
        return

    def needed(level: int) -> int:
        return sum(max(0, n[c] * level - load[c]) for c in classes)

    low = min(load[c] // n[c] for c in classes)  # needed(low) == 0
    # needed(level) >= level * sum(n) - sum(load), so needed(high) > units: a narrow search.
    high = (sum(load[c] for c in classes) + units) // sum(n[c] for c in classes) + 2
    while high - low > 1:
        mid = (low + high) // 2
        if needed(mid) <= units:
            low = mid
        else:
            high = mid
    for c in classes:
        add = n[c] * low - load[c]
        if add > 0:
            held[c] = held.get(c, 0) + add
            load[c] += add
            units -= add
    for c in classes:
        if not units:
            break
        add = min(units, n[c] * (low + 1) - load[c])
        if add > 0:
            held[c] = held.get(c, 0) + add
            load[c] += add
            units -= add


def _balance_classes(
    share: list[dict[int, int]], load: list[int], n: list[int], class_topics: list[tuple[int, ...]]
) -> None:
    """Pass partitions along chains of classes until no chain lowers the sum of squared loads.

    A class's members are balanced among themselves, so its most loaded member has
    ``ceil(load / n)`` partitions and its least loaded ``load // n``. Handing one partition from
    class u, along a chain, to class v helps exactly when ``ceil(load_u / n_u) >= load_v // n_v +
    2``. Without such a chain the loads minimise every symmetric convex cost, in particular the
    sum of squares and max - min (the flow-optimality condition: no improving residual path).

    Rounds go through the classes least loaded first; each is served, from the most loaded class
    its shortest chains reach, until no chain reaches a loaded-enough class. Such a class is then
    skipped for the rest of the round together with every class that can reach it (which cannot
    be served either). Rounds repeat until one moves nothing.
    """
    n_classes = len(load)
    ceil = [-(-load[c] // n[c]) for c in range(n_classes)]
    top = max(ceil)  # never rises: a receiver ends below the giver's old ceiling
    while True:
        skipped = bytearray(n_classes)
        moved = False
        for v in sorted(range(n_classes), key=lambda c: (load[c] // n[c], c)):
            while not skipped[v]:
                want = load[v] // n[v] + 2
                if top < want:
                    break
                giver, via = _nearest_giver(v, want, ceil, share, class_topics)
                if giver < 0:
                    for c in via:
                        skipped[c] = 1
                    break
                path: list[tuple[int, int, int]] = []  # (giver, topic, receiver) per hand-over
                c = giver
                while c != v:
                    t, to = via[c]
                    path.append((c, t, to))
                    c = to
                capacity = min(share[t][c] for c, t, _ in path)
                k = 0
                lu, nu, lv, nv = load[giver], n[giver], load[v], n[v]
                while k < capacity and -(-(lu - k) // nu) >= (lv + k) // nv + 2:
                    k += 1
                for c, t, to in path:
                    held = share[t]
                    held[c] -= k
                    if not held[c]:
                        del held[c]
                    held[to] = held.get(to, 0) + k
                load[giver] -= k
                load[v] += k
                ceil[giver] = -(-load[giver] // n[giver])
                ceil[v] = -(-load[v] // n[v])
                top = max(ceil)
                moved = True
        if not moved:
            return


def _nearest_giver(
    v: int, want: int, ceil: list[int], share: list[dict[int, int]], class_topics: list[tuple[int, ...]]
) -> tuple[int, dict[int, tuple[int, int]]]:
    """Breadth-first, backwards from class v: the most loaded class with ``ceil >= want`` among
    the nearest ones that can hand v a partition, directly or along a chain; -1 if none.

    :returns: the giver and, for every class reached, (the topic it hands on, to which class).
    """
    via: dict[int, tuple[int, int]] = {v: (-1, -1)}
    seen_topics: set[int] = set()
    frontier = [v]
    giver = -1
    while frontier and giver < 0:
        reached: list[int] = []
        for c in frontier:
            for t in class_topics[c]:
                if t in seen_topics:
                    continue
                seen_topics.add(t)
                for h in share[t]:
                    if h not in via:
                        via[h] = (t, c)
                        reached.append(h)
        for h in reached:
            if ceil[h] >= want and (giver < 0 or ceil[h] > ceil[giver]):
                giver = h
        frontier = reached
    return giver, via


def _keep_within_shares(
    group: list[int],
    keepable: dict[int, list[int]],
    quota: list[int],
    wanted: dict[int, int],
    topic_of: list[int],
    kept: list[list[int]],
) -> None:
    """Members of one class keep owned partitions up to their quotas and the class's topic shares.

    Topics the class owns no more of than its share are kept first, by every member; then the
    contested ones, members that own the most first. ``wanted`` is decremented by what is kept.
    """
    owned_per_topic: dict[int, int] = {}
    for i in group:
        for g in keepable[i]:
            t = topic_of[g]
            owned_per_topic[t] = owned_per_topic.get(t, 0) + 1
    contested = {t for t, x in owned_per_topic.items() if x > wanted[t]}
    order = sorted(group, key=lambda i: (-len(keepable[i]), i))
    left = {i: quota[i] for i in group}
    later: dict[int, list[int]] = {}
    for i in order:
        mine: list[int] = []
        rest: list[int] = []
        for g in keepable[i]:
            if len(mine) == left[i]:
                break
            t = topic_of[g]
            if t in contested:
                rest.append(g)
            else:
                mine.append(g)
                wanted[t] -= 1
        kept[i] = mine
        later[i] = rest
    if contested:
        for i in order:
            mine = kept[i]
            for g in later[i]:
                if len(mine) == quota[i]:
                    break
                t = topic_of[g]
                if wanted[t] > 0:
                    wanted[t] -= 1
                    mine.append(g)
            mine.sort()


def _place_by_rack(
    taken: bytearray,
    mismatched: list[int],
    racks_of: dict[int, frozenset[str]],
    member_rack: list[str | None],
    class_members: list[list[int]],
    member_class: list[int],
    topic_classes: list[list[int]],
    topic_of: list[int],
    owner: list[int],
    room: list[int],
    need: list[dict[int, int]],
    added: list[list[int]],
) -> None:
    """Steps 3 and 4 of the rack-aware rule of :func:`assign_sticky`."""
    queues: list[dict[str, deque[int]]] = [{} for _ in class_members]
    rack_room: list[dict[str, int]] = [{} for _ in class_members]
    for c, group in enumerate(class_members):
        for i in group:
            rack = member_rack[i]
            if rack is not None and room[i] > 0:
                queues[c].setdefault(rack, deque()).append(i)
                rack_room[c][rack] = rack_room[c].get(rack, 0) + room[i]

    def give(g: int, i: int) -> None:
        taken[g] = 1
        added[i].append(g)
        room[i] -= 1
        if need:
            need[member_class[i]][topic_of[g]] -= 1

    def place_near(g: int) -> None:
        t = topic_of[g]
        best: tuple[int, int, str] | None = None
        for c in topic_classes[t]:
            if need and need[c][t] <= 0:
                continue
            left = rack_room[c]
            for rack in racks_of[g]:
                spare = left.get(rack, 0)
                if spare > 0:
                    candidate = (-spare, c, rack)
                    if best is None or candidate < best:
                        best = candidate
        if best is None:
            return
        _, c, rack = best
        queue = queues[c][rack]
        i = queue.popleft()
        give(g, i)
        rack_room[c][rack] -= 1
        if room[i] > 0:
            queue.append(i)

    def by_fewest_racks(g: int) -> tuple[int, int]:
        return (len(racks_of[g]), g)

    away = set(mismatched)
    homeless = sorted((g for g in racks_of if not taken[g] and g not in away), key=by_fewest_racks)
    for g in homeless:  # step 3
        place_near(g)
    for g in sorted(away, key=by_fewest_racks):  # step 4: move closer to a replica ...
        place_near(g)
    for g in sorted(away):  # ... or stay
        if not taken[g]:
            i = owner[g]
            if room[i] > 0 and (not need or need[member_class[i]][topic_of[g]] > 0):
                give(g, i)


def _fill(group: list[int], room: list[int], pool: list[int], added: list[list[int]], spread: bool) -> None:
    """Hand ``pool`` (every partition of it) to the members of ``group`` with room."""
    if not pool:
        return
    position = 0
    if spread:
        active = [i for i in group if room[i] > 0]
        level = 0
        while active:
            width = len(active)
            for i, g in zip(active, pool[position : position + width], strict=True):
                added[i].append(g)
            position += width
            level += 1
            active = [i for i in active if room[i] > level]
    else:
        for i in group:
            k = room[i]
            if k > 0:
                added[i].extend(pool[position : position + k])
                position += k
    if position != len(pool):
        raise RuntimeError(f"assignor bug: {len(pool)} free partitions for {position} open slots")


def _hold_back_moving(
    members: list[Subscription],
    trusted: Sequence[frozenset[TopicPartition]],
    owner: list[int],
    base_of: dict[str, int],
    size_of: dict[str, int],
    added: list[list[int]],
) -> None:
    """Cooperative protocol: drop from ``added`` what another member may still own.

    Held back from member i: partitions trusted to another member, and partitions another
    member claims in the highest generation anyone claims them in (two such claims cancel each
    other's trust but either claimant may still consume the partition).
    """
    claimants: dict[int, set[int]] = {}
    if sum(len(s.owned) for s in members) != sum(map(len, trusted)):
        top: dict[int, int] = {}
        for i, s in enumerate(members):
            generation = s.generation
            for tp in s.owned:
                b = base_of.get(tp.topic)
                if b is None or not 0 <= tp.partition < size_of[tp.topic]:
                    continue
                g = b + tp.partition
                best = top.get(g)
                if best is None or generation > best:
                    top[g] = generation
                    claimants[g] = {i}
                elif generation == best:
                    claimants[g].add(i)
    for i, mine in enumerate(added):
        if mine:
            added[i] = [
                g for g in mine if (owner[g] < 0 or owner[g] == i) and not (claimants.get(g, {i}) - {i})
            ]
