"""jianmu_like: LLM agents as behaviour trees."""
