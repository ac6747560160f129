/* A bare-metal skinflint example: classify messages on a microcontroller,
 * computing each feature only when the model asks for it.
 *
 * The model is examples/models/groups.json (features w1, w2 share a costly
 * "tokens" descriptor; caps is cheap), compiled with
 *     skinflint compile ../models/groups.json --target c -o build/gen --prefix spam
 * "Sensors" are simulated by the rows below; fetch() logs every real fetch. */
#include <stdio.h>
#include <stdint.h>
#include "spam.h"

typedef struct { const float *row; int fetched; } sensors;

static float fetch(void *ctx, int32_t feature) {
    sensors *s = (sensors *)ctx;
    s->fetched += 1;
    printf("  fetch %-4s (cost %g)\n", spam_feature_names[feature], spam_feature_costs[feature]);
    return s->row[feature];
}

static const float rows[][SPAM_N_FEATURES] = {
    {0.0f, 0.0f, 5.0f},   /* w1 low: only caps is needed after w1 */
    {1.0f, 1.0f, 0.0f},   /* w1 high: w2 next, its group already paid */
    {0.0f, 9.0f, 1.0f},
};
static const double budgets[] = {1e9, 1e9, 21.5};

int main(void) {
    unsigned i;
    for (i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
        spam_workspace ws;
        spam_result r;
        sensors s;
        s.row = rows[i];
        s.fetched = 0;
        printf("row %u (budget %g):\n", i, budgets[i]);
        spam_predict_lazy(fetch, &s, budgets[i], &ws, &r);
        printf("row %u: %s, margin %d/1000, cost %d/1000, stage %d, %d fetches\n", i,
               spam_class_names[r.label], (int)(r.scores[0] * 1000.0f), (int)(r.cost * 1000.0),
               (int)r.stage, s.fetched);
    }
    return 0;
}
