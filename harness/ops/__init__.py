"""Operating the fleet: alert rules and dashboards generated from a target's config."""
