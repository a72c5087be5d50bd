"""Deterministic demo data written exactly as nanobot, yachiyo and araliya-bot write their files."""
