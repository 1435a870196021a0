/* chains.c: findings (chains.h). */
#include "chains.h"

const char *chains_sev_name(int sev)
{
    return sev == CHAIN_HIGH ? "HIGH" : sev == CHAIN_MEDIUM ? "MEDIUM" : "LOW";
}

int chains_severity(uint64_t impact_ns, uint64_t wall_ns)
{
    if (wall_ns == 0)
        return CHAIN_LOW;
    if (impact_ns * 10 >= wall_ns)
        return CHAIN_HIGH;
    if (impact_ns * 50 >= wall_ns)
        return CHAIN_MEDIUM;
    return CHAIN_LOW;
}

json_t *chains_build(const struct model *m, struct stats_table *t, const struct feed *f,
                     uint64_t wall_ns)
{
    (void)m;
    (void)t;
    (void)f;
    (void)wall_ns;
    return json_array();
}
