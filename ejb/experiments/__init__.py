"""The paper's experiments (section 6): one elastic job per run, all eligible jobs elastic, sensitivity."""
