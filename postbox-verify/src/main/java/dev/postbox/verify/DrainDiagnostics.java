package dev.postbox.verify;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;

/**
 * What the harness records when a drain exceeds its bound: the consumer group as the broker
 * describes it (state, generation's coordinator, each member with its client and instance id and
 * assignment) and the last state each consumer process wrote ({@link ConsumerStateFile}).
 */
final class DrainDiagnostics {

  private DrainDiagnostics() {}

  /** Lines describing {@code group} and the consumers' state files {@code stateFiles}. */
  static List<String> describe(Admin admin, String group, List<Path> stateFiles) {
    List<String> lines = new ArrayList<>();
    try {
      ConsumerGroupDescription g =
          admin
              .describeConsumerGroups(List.of(group))
              .describedGroups()
              .get(group)
              .get(10, TimeUnit.SECONDS);
      lines.add(
          "group "
              + group
              + ": state "
              + g.groupState()
              + ", coordinator "
              + g.coordinator()
              + ", assignor "
              + g.partitionAssignor()
              + ", "
              + g.members().size()
              + " members");
      for (MemberDescription m : g.members()) {
        lines.add(
            "  member "
                + m.consumerId()
                + " client "
                + m.clientId()
                + m.groupInstanceId().map(i -> " instance " + i).orElse("")
                + " host "
                + m.host()
                + " assigned "
                + m.assignment().topicPartitions().stream()
                    .map(tp -> tp.partition())
                    .sorted()
                    .toList());
      }
    } catch (Exception e) {
      lines.add("group " + group + ": not described (" + e + ")");
    }
    for (Path f : stateFiles) {
      try {
        lines.add("  consumer " + Files.readString(f).strip());
      } catch (IOException e) {
        lines.add(
            "  consumer state "
                + f.getFileName()
                + ": none ("
                + e.getClass().getSimpleName()
                + ")");
      }
    }
    return lines;
  }
}
