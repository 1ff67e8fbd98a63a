// JDBC facts docs/jobs.md states (Drivers) (run by test/crash/quickstart.sh):
// setString on a jsonb argument finds no function (42883); ?::jsonb and
// ?::interval casts work, and so does stringtype=unspecified without them;
// a session-bound claim's heartbeat reads as a timestamp in year 9999;
// coord.join takes setDouble and setInt weights, coord.segment_of setLong
// and UUID keys (the group "mail" exists: quickstart.sh made it).
// argv: a JDBC URL (without parameters).  Prints "ok ..." lines; exits 1 on
// the first failure.
import java.sql.*;
import java.time.OffsetDateTime;

public class JdbcChecks {
    static void ok(boolean cond, String what) {
        if (!cond) {
            System.out.println("FAIL: " + what);
            System.exit(1);
        }
        System.out.println("ok " + what);
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        try (Connection c = DriverManager.getConnection(url)) {
            PreparedStatement p = c.prepareStatement("SELECT coord.complete(?, ?, ?)");
            p.setLong(1, -1);
            p.setLong(2, 1);
            p.setString(3, "{}");
            String state = "";
            try {
                p.execute();
            } catch (SQLException e) {
                state = e.getSQLState();
            }
            ok(state.equals("42883"), "setString on a jsonb argument: no such function (42883), got '" + state + "'");

            p = c.prepareStatement("SELECT coord.complete(?, ?, ?::jsonb), coord.heartbeat(?, ?, ?::interval) IS NULL");
            p.setLong(1, -1);
            p.setLong(2, 1);
            p.setString(3, "{}");
            p.setLong(4, -1);
            p.setLong(5, 1);
            p.setString(6, "1 minute");
            try (ResultSet rs = p.executeQuery()) {
                ok(rs.next() && !rs.getBoolean(1) && rs.getBoolean(2), "?::jsonb and ?::interval casts");
            }

            p = c.prepareStatement("SELECT cardinality(coord.join('mail', 'jdbc-1', weight => ?))");
            p.setDouble(1, 2.5);
            try (ResultSet rs = p.executeQuery()) {
                ok(rs.next() && rs.getInt(1) == 1024, "coord.join, setDouble weight");
            }
            p.setInt(1, 3);
            try (ResultSet rs = p.executeQuery()) {
                ok(rs.next() && rs.getInt(1) == 1024, "coord.join, setInt weight");
            }
            java.util.UUID u = java.util.UUID.fromString("0b7e6c1a-4a4e-4f5e-9d2a-7c1c7a1e2f30");
            p = c.prepareStatement("SELECT coord.segment_of('mail', ?) = coord.segment_of('mail', '42'), "
                                   + "coord.segment_of('mail', ?) = coord.segment_of('mail', '" + u + "')");
            p.setLong(1, 42);
            p.setObject(2, u);
            try (ResultSet rs = p.executeQuery()) {
                ok(rs.next() && rs.getBoolean(1) && rs.getBoolean(2),
                   "coord.segment_of, setLong and UUID keys: the segment of the key's text");
            }

            try (Statement st = c.createStatement()) {
                st.execute("SET TimeZone = 'Pacific/Kiritimati'");
                st.execute("SELECT coord.enqueue('jdbc_hb')");
            }
            try (Statement st = c.createStatement();
                 ResultSet rs = st.executeQuery(
                     "SELECT coord.heartbeat(id, token) FROM coord.claim('jdbc_hb', session_bound => true)")) {
                ok(rs.next(), "session-bound claim");
                OffsetDateTime t = rs.getObject(1, OffsetDateTime.class);
                ok(t.toInstant().toString().equals("9999-01-01T00:00:00Z"),
                   "session-bound heartbeat reads as a timestamp: " + t);
            }
        }
        try (Connection c = DriverManager.getConnection(url + (url.contains("?") ? "&" : "?") + "stringtype=unspecified")) {
            PreparedStatement p = c.prepareStatement("SELECT coord.complete(?, ?, ?), coord.fail(?, ?, ?, ?) IS NULL");
            p.setLong(1, -1);
            p.setLong(2, 1);
            p.setString(3, "{}");
            p.setLong(4, -1);
            p.setLong(5, 1);
            p.setString(6, "error text");
            p.setString(7, "1 minute");
            try (ResultSet rs = p.executeQuery()) {
                ok(rs.next() && !rs.getBoolean(1) && rs.getBoolean(2), "stringtype=unspecified needs no casts");
            }
        }
    }
}
