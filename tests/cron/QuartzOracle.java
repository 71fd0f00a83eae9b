// Reads cases (expression TAB zone TAB start-epoch-ms) from stdin and prints,
// per case, "valid" or "invalid" and then up to 12 fire times (epoch ms) from
// Quartz's CronExpression.getNextValidTimeAfter, one line per case:
//   valid<TAB>t1,t2,...    or    invalid
// Quartz 2.3.2 loops forever on a few valid expressions (e.g. `L-30W` in
// February); a search that has not ended after a second is stopped and
// the line ends with "<TAB>loops" after the fire times found before it. A
// search that throws (a field whose set of values is empty) ends with
// "<TAB>throws".
// args[0], when given, pins CronExpression.MAX_YEAR (Quartz computes it from
// the wall clock as the current year + 100), so the comparison does not
// depend on the day it runs.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.util.Date;
import java.util.TimeZone;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.quartz.CronExpression;

public final class QuartzOracle {
  private static void pinMaxYear(int year) throws Exception {
    // Initialize the class first, or its initializer overwrites the value.
    Class.forName("org.quartz.CronExpression", true, QuartzOracle.class.getClassLoader());
    Field f = CronExpression.class.getField("MAX_YEAR");
    Field uf = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
    uf.setAccessible(true);
    sun.misc.Unsafe unsafe = (sun.misc.Unsafe) uf.get(null);
    @SuppressWarnings("deprecation")
    Object base = unsafe.staticFieldBase(f);
    @SuppressWarnings("deprecation")
    long offset = unsafe.staticFieldOffset(f);
    unsafe.putInt(base, offset, year);
    if (CronExpression.MAX_YEAR != year) throw new IllegalStateException("MAX_YEAR not pinned");
  }

  @SuppressWarnings({"deprecation", "removal"})
  private static void stop(Thread worker) {
    worker.stop();  // A daemon anyway; stop() frees the CPU (still works in Java 17).
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0) pinMaxYear(Integer.parseInt(args[0]));
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
    PrintWriter out = new PrintWriter(System.out);
    String line;
    while ((line = in.readLine()) != null) {
      String[] parts = line.split("\t", -1);
      if (line.isEmpty()) continue;
      if (parts.length != 3) throw new IllegalArgumentException("bad case line: " + line);
      CronExpression cron;
      try {
        cron = new CronExpression(parts[0]);
      } catch (java.text.ParseException e) {
        out.println("invalid");
        continue;
      }
      cron.setTimeZone(TimeZone.getTimeZone(parts[1]));
      StringBuilder sb = new StringBuilder("valid\t");
      Date t = new Date(Long.parseLong(parts[2]));
      for (int i = 0; i < 12; ++i) {
        final Date after = t;
        final CronExpression c = cron;
        FutureTask<Date> task = new FutureTask<>(() -> c.getNextValidTimeAfter(after));
        Thread worker = new Thread(task);
        worker.setDaemon(true);
        worker.start();
        try {
          t = task.get(1, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
          stop(worker);
          sb.append("\tloops");
          break;
        } catch (ExecutionException e) {
          sb.append("\tthrows");  // e.g. NoSuchElementException from an empty field
          break;
        }
        if (t == null) break;
        if (i > 0) sb.append(',');
        sb.append(t.getTime());
      }
      out.println(sb);
    }
    out.flush();
  }
}
