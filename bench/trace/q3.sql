-- TPC-H query 3 (Shipping Priority), TPC-H spec 2.4.3, with the validation
-- substitution values SEGMENT = 'BUILDING', DATE = 1995-03-15.
-- SQLite has no DATE type or `date '...'` literal: dates are stored as
-- 'YYYY-MM-DD' TEXT, so the literal is the plain string (same ordering).
select
	l_orderkey,
	sum(l_extendedprice * (1 - l_discount)) as revenue,
	o_orderdate,
	o_shippriority
from
	customer,
	orders,
	lineitem
where
	c_mktsegment = 'BUILDING'
	and c_custkey = o_custkey
	and l_orderkey = o_orderkey
	and o_orderdate < '1995-03-15'
	and l_shipdate > '1995-03-15'
group by
	l_orderkey,
	o_orderdate,
	o_shippriority
order by
	revenue desc,
	o_orderdate
limit 10;
