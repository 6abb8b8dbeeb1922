"""Helpers of the shop reference agent: question parsing, periods, SQL composition, recipes."""
