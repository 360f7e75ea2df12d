// A Kafka Streams application (Apache Kafka's own client) in a streams group of KIP-1071:
// one thread, one subtopology reading one topic: stateless, or, given a store name, counting
// records by key in an in-memory key-value store of that name (changelog topic
// "<application id>-<store>-changelog"). It prints the active and standby tasks of its thread
// as one line ("tasks 0_1 0_3 standby 0_2") whenever they change, and closes when its stdin
// does.
//
//   java -cp <kafka jars>:<classes> StreamsApplication <bootstrap> <application id> <topic> <state dir> [<store>]

import java.io.InputStream;
import java.time.Duration;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.Stores;

public class StreamsApplication {
    public static void main(String[] args) throws Exception {
        Properties config = new Properties();
        config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        config.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        config.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        config.put(StreamsConfig.STATE_DIR_CONFIG, args.length > 3 ? args[3] : System.getProperty("java.io.tmpdir"));
        StreamsBuilder builder = new StreamsBuilder();
        KStream<byte[], byte[]> source = builder.stream(args[2], Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()));
        if (args.length > 4) {
            source.groupByKey().count(
                Materialized.<byte[], Long>as(Stores.inMemoryKeyValueStore(args[4]))
                    .withKeySerde(Serdes.ByteArray())
                    .withValueSerde(Serdes.Long()));
        } else {
            source.foreach((key, value) -> { });
        }
        KafkaStreams streams = new KafkaStreams(builder.build(), config);
        streams.start();
        Thread watcher = new Thread(() -> {
            String last = null;
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException stop) {
                    return;
                }
                TreeSet<String> tasks = new TreeSet<>();
                TreeSet<String> standby = new TreeSet<>();
                try {
                    for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                        for (TaskMetadata task : thread.activeTasks()) {
                            tasks.add(task.taskId().toString());
                        }
                        for (TaskMetadata task : thread.standbyTasks()) {
                            standby.add(task.taskId().toString());
                        }
                    }
                } catch (RuntimeException notRunning) {
                    continue;
                }
                String line = ("tasks " + String.join(" ", tasks)).trim() + " standby " + String.join(" ", standby);
                if (!line.equals(last)) {
                    System.out.println(line.trim());
                    System.out.flush();
                    last = line;
                }
            }
        });
        watcher.setDaemon(true);
        watcher.start();
        InputStream in = System.in;
        while (in.read() != -1) {
            // until the test closes our stdin
        }
        watcher.interrupt();
        streams.close(Duration.ofSeconds(10));
        System.out.println("closed");
    }
}
