package io.qbeast.connect;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.RelationTimeTravel;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code SELECT ... FROM t VERSION AS OF n} (and {@code spark.read.option("versionAsOf", n)
 * .table(t)}) for a qbeast table of the session catalog.
 *
 * <p>Spark 4.2 refuses time travel on a session catalog table whose provider is not Delta
 * ({@code UNSUPPORTED_FEATURE.TIME_TRAVEL}) while it resolves the relation. This rule runs
 * before that (with the hint rules): it turns the time travel over such a table into the
 * plain relation with the read option {@link #VERSION}, which the plugin reads the table's
 * log at. {@code TIMESTAMP AS OF}, temporary views and other catalogs are left to Spark.
 */
public final class QbeastTimeTravelRule extends Rule<LogicalPlan> {
  /**
   * The read option with the version (the plugin reads it): Spark takes {@code versionAsOf}
   * in a relation's options for time travel, and would refuse it again.
   */
  public static final String VERSION = "qbeastVersionAsOf";

  private final SparkSession session;

  QbeastTimeTravelRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.resolveOperatorsUp(QbeastRelations.partial(this::rewrite));
  }

  private LogicalPlan rewrite(LogicalPlan plan) {
    if (plan instanceof UnresolvedRelation) {
      // spark.read.option("versionAsOf", n).table(name)
      UnresolvedRelation relation = (UnresolvedRelation) plan;
      String version = relation.options().get("versionAsOf");
      return version == null || !isQbeastTable(relation) ? null : atVersion(relation, version);
    }
    if (!(plan instanceof RelationTimeTravel)) {
      return null;
    }
    RelationTimeTravel travel = (RelationTimeTravel) plan;
    if (travel.timestamp().isDefined() || travel.version().isEmpty()
        || !(travel.relation() instanceof UnresolvedRelation)) {
      return null;
    }
    UnresolvedRelation relation = (UnresolvedRelation) travel.relation();
    return isQbeastTable(relation) ? atVersion(relation, travel.version().get()) : null;
  }

  /** {@code relation} with the version in {@link #VERSION} instead of Spark's option. */
  private static UnresolvedRelation atVersion(UnresolvedRelation relation, String version) {
    Map<String, String> options = new HashMap<>();
    relation.options().asCaseSensitiveMap().forEach((key, value) -> {
      if (!key.equalsIgnoreCase("versionAsOf")) {
        options.put(key, value);
      }
    });
    options.put(VERSION, version);
    return relation.copy(relation.multipartIdentifier(), new CaseInsensitiveStringMap(options),
        relation.isStreaming());
  }

  private boolean isQbeastTable(UnresolvedRelation relation) {
    org.apache.spark.sql.classic.SparkSession classic =
        (org.apache.spark.sql.classic.SparkSession) session;
    SessionCatalog catalog = classic.sessionState().catalog();
    List<String> parts = CollectionConverters.asJava(relation.multipartIdentifier());
    String database;
    String name = parts.get(parts.size() - 1);
    if (parts.size() == 1) {
      if (catalog.isTempView(relation.multipartIdentifier())
          || !CatalogManager.SESSION_CATALOG_NAME().equals(
              classic.sessionState().catalogManager().currentCatalog().name())) {
        return false;
      }
      database = catalog.getCurrentDatabase();
    } else if (parts.size() == 2) {
      database = parts.get(0);
    } else if (parts.size() == 3
        && CatalogManager.SESSION_CATALOG_NAME().equalsIgnoreCase(parts.get(0))) {
      database = parts.get(1);
    } else {
      return false;
    }
    CatalogTable table = QbeastCatalogRule.catalogTable(session, database, name);
    return table != null && table.provider().isDefined()
        && "qbeast".equalsIgnoreCase(table.provider().get());
  }
}
