package io.qbeast.connect;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Sample;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * Hands {@code TABLESAMPLE (p PERCENT)} and {@code DataFrame.sample(f)} over a read of the
 * {@code qbeast} Python data source to the source itself.
 *
 * <p>Spark 4.2 gives a Python data source no sample push-down: the plan keeps a {@code Sample}
 * above a scan of every file. This rule removes a {@code Sample} without replacement whose
 * lower bound is 0 and whose child is the source's relation (under deterministic projections
 * and filters, which commute with a per-row sample), and adds the read options
 * {@value #FRACTION} and {@value #SEED} to the relation. The plugin then returns the rows of
 * a qbeast sample (those whose weight is below the fraction's bound) from the files the index
 * selects, or, for a table without qbeast metadata, a Bernoulli sample of its rows. Two
 * stacked samples multiply their fractions. Anything else (with replacement, {@code
 * randomSplit}'s ranges, other sources) is left to Spark.
 *
 * <p>The relation gets a new table object ({@link QbeastRelations#withOptions}).
 */
public final class QbeastSampleRule extends Rule<LogicalPlan> {
  /** The read option with the fraction of rows to keep (the plugin reads it). */
  public static final String FRACTION = "tableSampleFraction";
  /** The read option with Spark's seed, for the Bernoulli sample of a table with no index. */
  public static final String SEED = "tableSampleSeed";

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.transformUp(QbeastRelations.partial(QbeastSampleRule::rewrite));
  }

  /** {@code plan} without its sample, or null when the rule does not apply to it. */
  static LogicalPlan rewrite(LogicalPlan plan) {
    if (!(plan instanceof Sample)) {
      return null;
    }
    Sample sample = (Sample) plan;
    double fraction = sample.upperBound();
    if (sample.withReplacement() || sample.lowerBound() != 0.0
        || !(fraction > 0.0 && fraction <= 1.0)) {
      return null;
    }
    DataSourceV2Relation relation = qbeastRelation(sample.child());
    if (relation == null) {
      return null;
    }
    Map<String, String> options = new HashMap<>(relation.options().asCaseSensitiveMap());
    String earlier = relation.options().get(FRACTION);
    if (earlier != null) {
      fraction *= Double.parseDouble(earlier);
    }
    options.put(FRACTION, Double.toString(fraction));
    options.put(SEED, sample.seed().isDefined() ? sample.seed().get().toString() : "0");
    DataSourceV2Relation sampled = QbeastRelations.withOptions(relation, options);
    return sample.child()
        .transformUp(QbeastRelations.partial(node -> node == relation ? sampled : null));
  }

  /** The qbeast relation under deterministic projections, filters and aliases, or null. */
  private static DataSourceV2Relation qbeastRelation(LogicalPlan plan) {
    LogicalPlan node = plan;
    while (true) {
      if (node instanceof Project && node.deterministic()) {
        node = ((Project) node).child();
      } else if (node instanceof Filter && node.deterministic()) {
        node = ((Filter) node).child();
      } else if (node instanceof SubqueryAlias) {
        node = ((SubqueryAlias) node).child();
      } else {
        break;
      }
    }
    return QbeastRelations.isQbeast(node) ? (DataSourceV2Relation) node : null;
  }
}
