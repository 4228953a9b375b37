"""Running the portal: roles, alerts, the dashboard and its metrics, and the record of access changes."""
