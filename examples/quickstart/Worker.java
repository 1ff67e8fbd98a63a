// pg_coord quick start: a worker in Java with JDBC (pgjdbc).  Run it with
//   java -cp /usr/share/java/postgresql.jar Worker.java QUEUE COUNT JDBC-URL
// (COUNT jobs before exiting, 0: run forever).  setString sends varchar, for
// which no coord function exists: cast jsonb and interval arguments (?::jsonb)
// or add stringtype=unspecified to the URL.
import java.sql.*;
import java.util.*;
import org.postgresql.PGConnection;

public class Worker {
    public static void main(String[] args) throws Exception {
        String queue = args[0];
        int stopAfter = Integer.parseInt(args[1]);
        try (Connection conn = DriverManager.getConnection(args[2]); Statement st = conn.createStatement()) {
            st.execute("LISTEN \"coord:" + queue + "\"");   // LISTEN before the first claim
            PreparedStatement claim = conn.prepareStatement("SELECT id, token, payload FROM coord.claim(?, 10)");
            PreparedStatement complete = conn.prepareStatement("SELECT coord.complete(?, ?, ?::jsonb)");
            PreparedStatement fail = conn.prepareStatement("SELECT coord.fail(?, ?, ?)");
            for (int done = 0; stopAfter == 0 || done < stopAfter; ) {
                List<Object[]> jobs = new ArrayList<>();
                claim.setString(1, queue);
                try (ResultSet rs = claim.executeQuery()) {
                    while (rs.next())
                        jobs.add(new Object[] {rs.getLong(1), rs.getLong(2), rs.getString(3)});
                }
                for (Object[] job : jobs) {
                    try {
                        String numbers = ((String) job[2]).replaceAll("(?s).*\"numbers\": *\\[([^\\]]*)\\].*", "$1");
                        long sum = 0;                        // the work
                        for (String n : numbers.split(","))
                            sum += Long.parseLong(n.trim());
                        complete.setLong(1, (Long) job[0]);
                        complete.setLong(2, (Long) job[1]);
                        complete.setString(3, "{\"sum\": " + sum + "}");
                        complete.execute();
                    } catch (RuntimeException e) {           // scheduled again later, or dead
                        fail.setLong(1, (Long) job[0]);
                        fail.setLong(2, (Long) job[1]);
                        fail.setString(3, e.toString());
                        fail.execute();
                    }
                    done++;
                }
                if (jobs.isEmpty())                          // wait for a NOTIFY, or poll after 1 s
                    conn.unwrap(PGConnection.class).getNotifications(1000);
            }
        }
    }
}
