// pg_coord quick start: a worker in Java with JDBC (pgjdbc).  Run it with
//   java -cp /usr/share/java/postgresql.jar Worker.java QUEUE COUNT JDBC-URL
// (COUNT jobs before exiting, 0: run forever).  setString sends varchar, for
// which no coord function exists: cast jsonb and interval arguments (?::jsonb)
// or add stringtype=unspecified to the URL.
import java.sql.*;
import org.postgresql.PGConnection;

public class Worker {
    public static void main(String[] args) throws Exception {
        String queue = args[0];
        int stopAfter = Integer.parseInt(args[1]);
        try (Connection conn = DriverManager.getConnection(args[2]); Statement st = conn.createStatement()) {
            st.execute("LISTEN \"coord:" + queue + "\"");   // LISTEN before the first claim
            PreparedStatement claim = conn.prepareStatement("SELECT id, token, payload FROM coord.claim(?)");
            // done (or failed), and the next job claimed, in one statement and one commit
            PreparedStatement complete = conn.prepareStatement(
                "SELECT id, token, payload FROM coord.complete_and_claim(?, ?, ?::jsonb, n => ?)");
            PreparedStatement fail = conn.prepareStatement(
                "SELECT id, token, payload FROM coord.fail_and_claim(?, ?, ?, n => ?)");
            Object[] job = null;
            for (int done = 0; stopAfter == 0 || done < stopAfter; ) {
                PreparedStatement next;
                if (job == null) {                           // nothing in hand: claim, or wait
                    claim.setString(1, queue);
                    job = fetch(claim);
                    if (job == null)                         // wait for a NOTIFY, or poll after 1 s
                        conn.unwrap(PGConnection.class).getNotifications(1000);
                    continue;
                }
                done++;
                int more = done == stopAfter ? 0 : 1;        // claim no job it will not do
                try {
                    String numbers = ((String) job[2]).replaceAll("(?s).*\"numbers\": *\\[([^\\]]*)\\].*", "$1");
                    long sum = 0;                            // the work
                    for (String n : numbers.split(","))
                        sum += Long.parseLong(n.trim());
                    next = complete;
                    next.setString(3, "{\"sum\": " + sum + "}");
                } catch (RuntimeException e) {               // scheduled again later, or dead
                    next = fail;
                    next.setString(3, e.toString());
                }
                next.setLong(1, (Long) job[0]);
                next.setLong(2, (Long) job[1]);
                next.setInt(4, more);
                job = fetch(next);
            }
        }
    }

    // the job of the statement's first row, or null (no row, or its id NULL: nothing claimed)
    static Object[] fetch(PreparedStatement st) throws SQLException {
        try (ResultSet rs = st.executeQuery()) {
            if (!rs.next())
                return null;
            long id = rs.getLong(1);
            return rs.wasNull() ? null : new Object[] {id, rs.getLong(2), rs.getString(3)};
        }
    }
}
