import com.sun.tools.attach.VirtualMachine;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Prints a broker's per-topic counters: {@code java BrokerTopicMetrics.java <broker pid>
 * <topic> <metric>...} prints "metric count" per line (for instance BytesOutPerSec, the bytes
 * of fetch responses the broker served for the topic). It attaches to the broker's JVM and
 * starts its local management agent, so the broker needs no JMX port.
 */
public class BrokerTopicMetrics {
    public static void main(String[] args) throws Exception {
        VirtualMachine vm = VirtualMachine.attach(args[0]);
        String address;
        try {
            address = vm.startLocalManagementAgent();
        } finally {
            vm.detach();
        }
        try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            for (int i = 2; i < args.length; i++) {
                ObjectName name = new ObjectName(
                    "kafka.server:type=BrokerTopicMetrics,name=" + args[i] + ",topic=" + args[1]);
                long count = server.isRegistered(name)
                    ? ((Number) server.getAttribute(name, "Count")).longValue() : 0L;
                System.out.println(args[i] + " " + count);
            }
        }
    }
}
