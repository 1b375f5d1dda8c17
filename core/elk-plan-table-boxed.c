/* elk-plan-table-boxed.c: ElkPlanTable as a boxed type, and element
 * accessors for bindings.
 *
 * The tables of a plan set belong to the set.  A binding that wraps a
 * table it got from elk_plan_set_get_table() copies it through the boxed
 * type, so the copy must be deep: a shallow one would share the set's
 * arrays and dangle once the set is freed.  C code never needs these: it
 * reads the set's tables in place. */
#include "config.h"

#include "elk-private.h"

#include <elk/elk-plan.h>

/**
 * elk_plan_table_get_type:
 *
 * The boxed type of #ElkPlanTable, copied deeply with
 * elk_plan_table_copy() and freed with elk_plan_table_free().
 *
 * Returns: the #GType of #ElkPlanTable.
 */
ELK_DEFINE_BOXED_TYPE (ElkPlanTable,
                       elk_plan_table,
                       elk_plan_table_copy,
                       elk_plan_table_free)

/**
 * elk_plan_table_copy:
 * @table: a plan table
 *
 * Copies @table and its plan, front and cold-hot arrays, so that the copy
 * stays valid after the #ElkPlanSet it came from is freed.  Tables are
 * large (thousands of plans for a big operator), so C code reads the
 * set's tables in place instead.
 *
 * Returns: (transfer full): a deep copy of @table; free it with
 *   elk_plan_table_free().
 */
ElkPlanTable *
elk_plan_table_copy (const ElkPlanTable *table)
{
  ElkPlanTable *copy;

  g_return_val_if_fail (table != NULL, NULL);

  copy = g_memdup2 (table, sizeof (ElkPlanTable));
  copy->plans = g_memdup2 (table->plans, sizeof (ElkPlan) * table->n_plans);
  copy->hot_front
      = g_memdup2 (table->hot_front, sizeof (guint32) * table->n_hot);
  copy->cold_hot
      = g_memdup2 (table->cold_hot, sizeof (ElkColdHot) * table->n_cold_hot);
  return copy;
}

/**
 * elk_plan_table_free:
 * @table: (transfer full) (nullable): a table made by
 *   elk_plan_table_copy(), or %NULL
 *
 * Frees a copied table and its arrays.  Never call it on a table that
 * belongs to an #ElkPlanSet.
 */
void
elk_plan_table_free (ElkPlanTable *table)
{
  if (table == NULL)
    return;
  g_free (table->plans);
  g_free (table->hot_front);
  g_free (table->cold_hot);
  g_free (table);
}

/**
 * elk_plan_table_get_plan:
 * @table: a plan table
 * @index: a plan index, below @table's n_plans
 *
 * Gets one kept plan.  C code indexes the plans array directly; bindings
 * cannot read an array of structs from a field, so they use this.
 *
 * Returns: (transfer none): plan @index, owned by @table.
 */
const ElkPlan *
elk_plan_table_get_plan (const ElkPlanTable *table, guint index)
{
  g_return_val_if_fail (table != NULL, NULL);
  g_return_val_if_fail (index < table->n_plans, NULL);
  return &table->plans[index];
}

/**
 * elk_plan_table_get_cold_hot:
 * @table: a plan table
 * @index: an entry index, below @table's n_cold_hot
 *
 * Gets one entry of the cold-hot table, as elk_plan_table_get_plan() gets
 * a plan.
 *
 * Returns: (transfer none): cold-hot entry @index, owned by @table.
 */
const ElkColdHot *
elk_plan_table_get_cold_hot (const ElkPlanTable *table, guint index)
{
  g_return_val_if_fail (table != NULL, NULL);
  g_return_val_if_fail (index < table->n_cold_hot, NULL);
  return &table->cold_hot[index];
}
