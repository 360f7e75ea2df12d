// Apache Kafka's Java admin client authenticating against one server after another, in one JVM
// (a JVM each would cost seconds): each line of standard input is a case,
//   LABEL <tab> BOOTSTRAP <tab> SECURITY_PROTOCOL <tab> MECHANISM <tab> USER <tab> PASSWORD <tab> CA_PEM
// (CA_PEM empty without TLS). For each, the client describes the cluster and lists the groups,
// and one JSON line reports it: {"label": ..., "ok": true, "nodes": N} or
// {"label": ..., "ok": false, "error": "SaslAuthenticationException", "message": "..."}.
// Run with Kafka's classpath: java -cp CLASSPATH JavaAuthProbe.java < cases

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class JavaAuthProbe {
    public static void main(String[] argv) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split("\t", -1);
            System.out.println(probe(f[0], f[1], f[2], f[3], f[4], f[5], f[6]));
            System.out.flush();
        }
    }

    static String probe(String label, String bootstrap, String protocol, String mechanism,
                        String user, String password, String ca) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "java-auth-probe-" + label);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        props.put("security.protocol", protocol);
        if (protocol.startsWith("SASL")) {
            String module = mechanism.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
            props.put("sasl.mechanism", mechanism);
            props.put("sasl.jaas.config", module + " required username=\"" + user
                + "\" password=\"" + password + "\";");
        }
        if (!ca.isEmpty()) {
            props.put("ssl.truststore.type", "PEM");
            props.put("ssl.truststore.location", ca);
        }
        try (Admin admin = Admin.create(props)) {
            int nodes = admin.describeCluster().nodes().get(20, TimeUnit.SECONDS).size();
            admin.listGroups().all().get(20, TimeUnit.SECONDS);
            return "{\"label\": " + quote(label) + ", \"ok\": true, \"nodes\": " + nodes + "}";
        } catch (Exception e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            return "{\"label\": " + quote(label) + ", \"ok\": false, \"error\": "
                + quote(cause.getClass().getSimpleName()) + ", \"message\": "
                + quote(String.valueOf(cause.getMessage())) + "}";
        }
    }

    static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
