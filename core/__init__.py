"""The shared kernel every app uses: stores, guarded updates, who is acting, log context and scrubbing, display
formatting, percentiles, retry waits and the read-only admin bases (nothing here imports an app)."""
