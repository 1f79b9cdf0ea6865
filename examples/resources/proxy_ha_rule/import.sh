# The rule id. Only a rule a proxy_ha_rule made (its comment ends with its
# proxy-operator-ha-rule=<uid> line) can be imported.
terraform import proxy_ha_rule.apart proxy-pair-apart
