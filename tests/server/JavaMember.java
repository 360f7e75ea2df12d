// A group member process driven by Apache Kafka's own Java consumer (KafkaConsumer).
//
// Started by kafka_member.py (--client java), which replaces itself with
//   java -cp <Kafka's jars> JavaMember.java --bootstrap HOST:PORT --name m1 ...
// so the test's pid, signals and stdout are this process's. It prints the same JSON lines as the
// Python clients: one per ownership change, written from inside the rebalance listener (a
// revocation is reported before the member rejoins), commit results when --commit-every-ms is
// set, and with --read the records it consumed (committed synchronously after each poll).
// --group-protocol consumer uses KIP-848's protocol; with it, --pattern REGEX subscribes to the
// topics the coordinator finds matching (instead of --topic). --ssl-ca CA.pem connects over TLS.
// --sasl-mechanism PLAIN|SCRAM-SHA-256|SCRAM-SHA-512 --sasl-user U --sasl-password P authenticates
// (SASL_SSL with --ssl-ca, else SASL_PLAINTEXT); a failed authentication (or TLS handshake) is
// reported as an "error" event with the client's exception and message, and the member ends.
// SIGTERM closes the consumer gracefully (LeaveGroup); the process ends by itself when its
// parent is gone.

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class JavaMember {
    static final TreeSet<Integer> owned = new TreeSet<>();
    static String name;
    // stdout carries the JSON reports only: main() points System.out at stderr before the Kafka
    // client starts logging (log4j's default console appender writes ERROR lines to System.out).
    static final PrintStream reports = System.out;

    static synchronized void report(String fields) {
        reports.println("{\"t\": " + (System.currentTimeMillis() / 1000.0) + ", \"name\": \"" + name + "\", " + fields + "}");
        reports.flush();
    }

    static String list(Collection<Integer> values) {
        StringBuilder out = new StringBuilder("[");
        for (Integer v : values) {
            if (out.length() > 1) out.append(", ");
            out.append(v);
        }
        return out.append("]").toString();
    }

    // A JSON string: quotes, backslashes and control characters escaped.
    static String quoted(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : String.valueOf(text).toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        return out.append('"').toString();
    }

    // A JAAS option value in double quotes (Kafka's JaasConfig reads backslash escapes).
    static String jaasQuoted(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static void change(String kind, Collection<TopicPartition> partitions) {
        TreeSet<Integer> ids = new TreeSet<>();
        TreeSet<String> pairs = new TreeSet<>();  // (topic, partition) as JSON, for several topics
        for (TopicPartition tp : partitions) {
            ids.add(tp.partition());
            pairs.add("[\"" + tp.topic() + "\", " + tp.partition() + "]");
        }
        synchronized (owned) {
            if (kind.equals("assigned")) owned.addAll(ids); else owned.removeAll(ids);
            report("\"event\": \"" + kind + "\", \"partitions\": " + list(ids) + ", \"owned\": " + list(owned)
                + ", \"topic_partitions\": [" + String.join(", ", pairs) + "]");
        }
    }

    public static void main(String[] argv) throws Exception {
        System.setOut(System.err);
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) args.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        name = args.get("name");
        String topic = args.getOrDefault("topic", "events");
        int sessionMs = Integer.parseInt(args.getOrDefault("session-ms", "6000"));
        int commitEveryMs = Integer.parseInt(args.getOrDefault("commit-every-ms", "0"));
        boolean read = Boolean.parseBoolean(args.getOrDefault("read", "false"));
        String protocol = args.getOrDefault("group-protocol", "classic");
        String assignor = args.getOrDefault("assignor", "range");

        Properties props = new Properties();
        props.put("bootstrap.servers", args.get("bootstrap"));
        props.put("group.id", args.getOrDefault("group", "g"));
        props.put("client.id", name);
        props.put("group.protocol", protocol);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        if (protocol.equals("classic")) {
            props.put("session.timeout.ms", Integer.toString(sessionMs));
            props.put("heartbeat.interval.ms", Integer.toString(Math.max(sessionMs / 6, 100)));
            Map<String, String> strategies = Map.of(
                "range", "org.apache.kafka.clients.consumer.RangeAssignor",
                "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
                "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
                "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            props.put("partition.assignment.strategy", strategies.get(assignor));
        } else if (args.containsKey("remote-assignor")) {
            props.put("group.remote.assignor", args.get("remote-assignor"));
        }
        if (args.containsKey("instance-id")) props.put("group.instance.id", args.get("instance-id"));
        // --ssl-ca CA.pem: TLS (security.protocol=SSL), the server's certificate checked against it.
        if (args.containsKey("ssl-ca")) {
            props.put("security.protocol", "SSL");
            props.put("ssl.truststore.type", "PEM");
            props.put("ssl.truststore.location", args.get("ssl-ca"));
        }
        // --sasl-mechanism M --sasl-user U --sasl-password P: SASL, over TLS if --ssl-ca is given.
        if (args.containsKey("sasl-mechanism")) {
            String mechanism = args.get("sasl-mechanism");
            String module = mechanism.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
            props.put("security.protocol", args.containsKey("ssl-ca") ? "SASL_SSL" : "SASL_PLAINTEXT");
            props.put("sasl.mechanism", mechanism);
            props.put("sasl.jaas.config", module + " required username=" + jaasQuoted(args.get("sasl-user"))
                + " password=" + jaasQuoted(args.get("sasl-password")) + ";");
        }

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        CountDownLatch closed = new CountDownLatch(1);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try { closed.await(); } catch (InterruptedException e) { }
        }));
        long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
        report("\"event\": \"started\"");
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) { change("revoked", partitions); }
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) { change("assigned", partitions); }
            public void onPartitionsLost(Collection<TopicPartition> partitions) { change("lost", partitions); }
        };
        if (args.containsKey("pattern")) {
            // KIP-848: a regex (RE2J) the coordinator evaluates against the cluster's topics.
            consumer.subscribe(new SubscriptionPattern(args.get("pattern")), listener);
        } else {
            consumer.subscribe(List.of(topic), listener);
        }
        long lastCommit = 0;
        long counter = 0;
        String commitError = "unset";
        try {
            while (ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L) == parent) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    break;
                } catch (AuthenticationException e) {  // every later poll would fail the same way
                    report("\"event\": \"error\", \"error\": " + quoted(e.getClass().getSimpleName())
                        + ", \"message\": " + quoted(e.getMessage()));
                    break;
                } catch (KafkaException e) {  // the embedded coordinator keeps no log: fetches fail
                    continue;
                }
                if (read && !records.isEmpty()) {
                    StringBuilder out = new StringBuilder("[");
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        if (out.length() > 1) out.append(", ");
                        out.append("[").append(r.partition()).append(", ").append(r.offset()).append("]");
                    }
                    report("\"event\": \"records\", \"records\": " + out.append("]"));
                    String error = null;
                    try {
                        consumer.commitSync();
                    } catch (WakeupException e) {
                        break;
                    } catch (KafkaException e) {
                        error = e.getClass().getSimpleName();
                    }
                    report("\"event\": \"commit\", \"ok\": " + (error == null) + ", \"error\": " + (error == null ? "null" : "\"" + error + "\""));
                }
                if (commitEveryMs > 0 && System.currentTimeMillis() - lastCommit > commitEveryMs) {
                    lastCommit = System.currentTimeMillis();
                    List<Integer> mine;
                    synchronized (owned) { mine = new ArrayList<>(owned); }
                    if (!mine.isEmpty()) {
                        counter += 1;
                        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                        for (int p : mine) offsets.put(new TopicPartition(topic, p), new OffsetAndMetadata(counter, name));
                        String error = null;
                        try {
                            consumer.commitSync(offsets);
                        } catch (WakeupException e) {
                            break;
                        } catch (KafkaException e) {
                            error = e.getClass().getSimpleName();
                        }
                        String key = error == null ? "ok" : error;
                        if (!key.equals(commitError)) {
                            commitError = key;
                            report("\"event\": \"commit\", \"ok\": " + (error == null) + ", \"error\": " + (error == null ? "null" : "\"" + error + "\""));
                        }
                    }
                }
            }
        } finally {
            consumer.close();
            report("\"event\": \"closed\"");
            closed.countDown();
        }
    }
}
