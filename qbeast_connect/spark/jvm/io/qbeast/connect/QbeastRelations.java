package io.qbeast.connect;

import java.util.Map;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Function1;
import scala.runtime.AbstractPartialFunction;

/** What the extension's rules share: finding a read of the qbeast source and re-optioning it. */
final class QbeastRelations {
  private static final String SOURCE = "qbeast";

  private QbeastRelations() {}

  /** Whether {@code plan} is a read of the {@code qbeast} Python data source. */
  static boolean isQbeast(LogicalPlan plan) {
    if (!(plan instanceof DataSourceV2Relation)) {
      return false;
    }
    DataSourceV2Relation relation = (DataSourceV2Relation) plan;
    return relation.table() instanceof PythonTable
        && SOURCE.equalsIgnoreCase(relation.table().name());
  }

  /**
   * {@code relation} reading with {@code options}, on a fresh table object: a
   * {@code PythonDataSourceV2} keeps the Python source it created for the first options it
   * saw, so the old one would never see new options.
   */
  @SuppressWarnings("deprecation") // Table.schema(): PythonTable's schema, as Spark gives it
  static DataSourceV2Relation withOptions(
      DataSourceV2Relation relation, Map<String, String> options) {
    PythonDataSourceV2 source = new PythonDataSourceV2();
    source.setShortName(relation.table().name());
    PythonTable table =
        new PythonTable(source, relation.table().name(), relation.table().schema());
    return relation.copy(table, relation.output(), relation.catalog(), relation.identifier(),
        new CaseInsensitiveStringMap(options), relation.timeTravelSpec());
  }

  /** A Scala partial function defined where {@code f} returns non-null. */
  static AbstractPartialFunction<LogicalPlan, LogicalPlan> partial(
      java.util.function.Function<LogicalPlan, LogicalPlan> f) {
    return new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
      @Override
      public boolean isDefinedAt(LogicalPlan node) {
        return f.apply(node) != null;
      }

      @Override
      public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> fallback) {
        LogicalPlan out = f.apply(node);
        @SuppressWarnings("unchecked")
        B1 result = out == null ? fallback.apply(node) : (B1) out;
        return result;
      }
    };
  }
}
