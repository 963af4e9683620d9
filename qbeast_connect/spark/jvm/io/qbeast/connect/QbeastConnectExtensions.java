package io.qbeast.connect;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;

import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * qbeast-connect's Spark SQL extension ({@code spark.sql.extensions}): optional, for servers
 * that want samples from SQL and DataFrames pushed to the qbeast index and catalog tables
 * with column lists, managed tables, CTAS and {@code VERSION AS OF}: {@link QbeastSampleRule},
 * {@link QbeastCatalogRule} and {@link QbeastTimeTravelRule}. The Python plugin works without
 * it.
 */
public final class QbeastConnectExtensions
    extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectHintResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new QbeastTimeTravelRule(session);
          }
        });
    extensions.injectPostHocResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new QbeastCatalogRule(session);
          }
        });
    extensions.injectOptimizerRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return new QbeastSampleRule();
      }
    });
    return BoxedUnit.UNIT;
  }
}
