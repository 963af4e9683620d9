package io.qbeast.connect;

import java.net.URI;
import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Gives reads and writes of a {@code qbeast} table in the session catalog the table's location
 * and {@code OPTIONS}.
 *
 * <p>Spark 4.2 hands a Python data source a catalog table's options only when {@code CREATE
 * TABLE} asks it for a schema, never on later reads and writes. Without this rule the plugin
 * keeps the location in the schema the catalog stores, which needs a {@code CREATE} without a
 * column list and with {@code LOCATION}. This rule, run after analysis, adds the catalog's
 * location (as {@code path}) and the table's {@code OPTIONS} to the read's options and to the
 * write options of {@code INSERT INTO}/{@code INSERT OVERWRITE} (also the writes of a
 * {@code CREATE TABLE ... AS SELECT}), so column lists, managed tables and CTAS work; options
 * given to the read or write itself win.
 */
public final class QbeastCatalogRule extends Rule<LogicalPlan> {
  /** The option that lists the keys taken from the catalog's OPTIONS (the plugin reads it). */
  public static final String CATALOG_KEYS = "qbeastCatalogKeys";
  /** The option with the catalog table's PARTITIONED BY columns (the plugin refuses them). */
  public static final String PARTITION_COLUMNS = "qbeastCatalogPartitionColumns";

  private final SparkSession session;

  QbeastCatalogRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.transformUp(QbeastRelations.partial(this::rewrite));
  }

  private LogicalPlan rewrite(LogicalPlan plan) {
    if (plan instanceof DataSourceV2Relation) {
      DataSourceV2Relation relation = (DataSourceV2Relation) plan;
      Map<String, String> options =
          catalogOptions(relation, relation.options().asCaseSensitiveMap());
      return options == null ? null : QbeastRelations.withOptions(relation, options);
    }
    if (plan instanceof AppendData) {
      AppendData write = (AppendData) plan;
      scala.collection.immutable.Map<String, String> options = writeOptions(write.table(),
          write.writeOptions());
      return options == null ? null : write.copy(write.table(), write.query(), options,
          write.isByName(), write.withSchemaEvolution(), write.write(), write.analyzedQuery());
    }
    if (plan instanceof OverwriteByExpression) {
      OverwriteByExpression write = (OverwriteByExpression) plan;
      scala.collection.immutable.Map<String, String> options = writeOptions(write.table(),
          write.writeOptions());
      return options == null ? null : write.copy(write.table(), write.deleteExpr(),
          write.query(), options, write.isByName(), write.withSchemaEvolution(), write.write(),
          write.analyzedQuery());
    }
    if (plan instanceof OverwritePartitionsDynamic) {
      OverwritePartitionsDynamic write = (OverwritePartitionsDynamic) plan;
      scala.collection.immutable.Map<String, String> options = writeOptions(write.table(),
          write.writeOptions());
      return options == null ? null : write.copy(write.table(), write.query(), options,
          write.isByName(), write.withSchemaEvolution(), write.write());
    }
    return null;
  }

  private scala.collection.immutable.Map<String, String> writeOptions(
      Object table, scala.collection.immutable.Map<String, String> given) {
    if (!(table instanceof DataSourceV2Relation)) {
      return null;
    }
    Map<String, String> options =
        catalogOptions((DataSourceV2Relation) table, CollectionConverters.asJava(given));
    return options == null ? null
        : scala.collection.immutable.Map.from(CollectionConverters.asScala(options));
  }

  /**
   * The catalog's location and options under {@code given} (which win), or null when
   * {@code relation} is not a qbeast table of the session catalog, or {@code given} already
   * names a path.
   */
  private Map<String, String> catalogOptions(
      DataSourceV2Relation relation, Map<String, String> given) {
    if (!QbeastRelations.isQbeast(relation) || relation.identifier().isEmpty()
        || relation.catalog().isEmpty()
        || !CatalogManager.SESSION_CATALOG_NAME().equals(relation.catalog().get().name())) {
      return null;
    }
    for (String key : given.keySet()) {
      if (key.equalsIgnoreCase("path")) {
        return null;
      }
    }
    Identifier id = relation.identifier().get();
    String[] namespace = id.namespace();
    CatalogTable table = catalogTable(session,
        namespace.length == 0 ? null : namespace[namespace.length - 1], id.name());
    if (table == null) {
      return null; // not a session catalog table after all: the plugin says what is missing
    }
    Map<String, String> options = new HashMap<>();
    for (Map.Entry<String, String> entry :
        CollectionConverters.asJava(table.storage().properties()).entrySet()) {
      if (!entry.getKey().equalsIgnoreCase("path")) {
        options.put(entry.getKey(), entry.getValue());
      }
    }
    // the plugin keeps only the table options among these (not CREATE's own, like schema)
    options.put(CATALOG_KEYS, String.join(",", options.keySet()));
    options.put("path", location(table.location()));
    if (!table.partitionColumnNames().isEmpty()) {
      options.put(PARTITION_COLUMNS,
          String.join(",", CollectionConverters.asJava(table.partitionColumnNames())));
    }
    for (Map.Entry<String, String> entry : given.entrySet()) {
      options.keySet().removeIf(key -> key.equalsIgnoreCase(entry.getKey()));
      options.put(entry.getKey(), entry.getValue());
    }
    return options;
  }

  /** The session catalog's table {@code database.name} (null: none, or it cannot be read). */
  static CatalogTable catalogTable(SparkSession session, String database, String name) {
    try {
      return ((org.apache.spark.sql.classic.SparkSession) session).sessionState().catalog()
          .getTableMetadata(new TableIdentifier(name, Option.apply(database)));
    } catch (Exception e) {
      return null;
    }
  }

  /** A local location as a path, any other as its URI. */
  private static String location(URI uri) {
    String scheme = uri.getScheme();
    return scheme == null || scheme.equals("file") ? uri.getPath() : uri.toString();
  }
}
