// Apache Kafka's server-side task assignor of streams groups (KIP-1071: the StickyTaskAssignor of
// its group coordinator), timed on groups built from the arguments, for
// bench/bench_streams_assignors.py, which builds the same groups for this project's assignor.
//
//   java -cp <kafka jars>:<classes> StreamsTaskAssignorBench <members> <subtopologies> <partitions> <standbys> <runs>
//
// Members m0000, m0001, ... each in a process of its own; every subtopology stateful, reading
// <partitions> partitions. Two cases, each timed <runs> times after as many untimed calls:
// "scratch" (nobody holds anything) and "leave" (the group settled on the scratch assignment,
// then m0000 gone). Prints one JSON line per case.

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.coordinator.group.streams.assignor.AssignmentMemberSpec;
import org.apache.kafka.coordinator.group.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.apache.kafka.coordinator.group.streams.assignor.TopologyDescriber;

public class StreamsTaskAssignorBench {
    public static void main(String[] args) {
        int members = Integer.parseInt(args[0]);
        int subtopologies = Integer.parseInt(args[1]);
        int partitions = Integer.parseInt(args[2]);
        int standbys = Integer.parseInt(args[3]);
        int runs = Integer.parseInt(args[4]);
        List<String> ids = new ArrayList<>();
        for (int s = 0; s < subtopologies; s++) {
            ids.add(String.valueOf(s));
        }
        TopologyDescriber topology = new TopologyDescriber() {
            public List<String> subtopologies() {
                return ids;
            }

            public int maxNumInputPartitions(String subtopology) {
                return partitions;
            }

            public boolean isStateful(String subtopology) {
                return true;
            }
        };
        Map<String, String> configs = Map.of("num.standby.replicas", String.valueOf(standbys));
        Map<String, AssignmentMemberSpec> nobody = new TreeMap<>();
        for (int i = 0; i < members; i++) {
            nobody.put(name(i), spec(name(i), Map.of(), Map.of()));
        }
        GroupAssignment first = timed("scratch", nobody, topology, configs, runs, null);
        Map<String, AssignmentMemberSpec> settled = new TreeMap<>();
        for (int i = 1; i < members; i++) {
            MemberAssignment holds = first.members().get(name(i));
            settled.put(name(i), spec(name(i), holds.activeTasks(), holds.standbyTasks()));
        }
        timed("leave", settled, topology, configs, runs, first);
    }

    static String name(int i) {
        return String.format("m%04d", i);
    }

    static AssignmentMemberSpec spec(String id, Map<String, Set<Integer>> active, Map<String, Set<Integer>> standby) {
        return new AssignmentMemberSpec(
            Optional.empty(), Optional.empty(), active, standby, Map.of(), id, Map.of(), Map.of(), Map.of());
    }

    static GroupAssignment timed(
        String label,
        Map<String, AssignmentMemberSpec> members,
        TopologyDescriber topology,
        Map<String, String> configs,
        int runs,
        GroupAssignment before
    ) {
        GroupSpecImpl group = new GroupSpecImpl(members, configs);
        GroupAssignment result = null;
        for (int i = 0; i < runs; i++) {
            result = new StickyTaskAssignor().assign(group, topology);
        }
        double[] ms = new double[runs];
        for (int i = 0; i < runs; i++) {
            long start = System.nanoTime();
            result = new StickyTaskAssignor().assign(group, topology);
            ms[i] = (System.nanoTime() - start) / 1e6;
        }
        Arrays.sort(ms);
        int most = 0;
        int least = Integer.MAX_VALUE;
        int standbyCount = 0;
        int moved = 0;
        for (Map.Entry<String, MemberAssignment> entry : result.members().entrySet()) {
            int active = count(entry.getValue().activeTasks());
            most = Math.max(most, active);
            least = Math.min(least, active);
            standbyCount += count(entry.getValue().standbyTasks());
            if (before != null) {
                Map<String, Set<Integer>> had = before.members().get(entry.getKey()).activeTasks();
                for (Map.Entry<String, Set<Integer>> tasks : had.entrySet()) {
                    for (Integer partition : tasks.getValue()) {
                        if (!entry.getValue().activeTasks().getOrDefault(tasks.getKey(), Set.of()).contains(partition)) {
                            moved++;
                        }
                    }
                }
            }
        }
        System.out.printf(
            "{\"case\": \"%s\", \"median_ms\": %.4f, \"best_ms\": %.4f, \"active_spread\": %d, \"standbys\": %d, \"moved\": %d}%n",
            label, ms[runs / 2], ms[0], most - least, standbyCount, moved);
        return result;
    }

    static int count(Map<String, Set<Integer>> tasks) {
        int n = 0;
        for (Set<Integer> partitions : tasks.values()) {
            n += partitions.size();
        }
        return n;
    }
}
