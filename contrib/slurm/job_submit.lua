--[[
 job_submit.lua - kmux's part of slurmctld's job_submit/lua: turns a job's
 declared GPU memory (srun/sbatch --kmux-mem=SIZE, passed here by
 kmux_spank.so as KMUX_MEM=<bytes> in the job's control environment) into
 a request for the count-only GRES `kmuxmem`, counted in MiB, so that Slurm
 never places more declared memory on a node than the node advertises.

 Unit: 1 kmuxmem = 1 MiB of GPU memory.  A node advertises the sum over
 its GPUs (gres.conf: NodeName=gpu01 Name=kmuxmem Count=655360 for 8 x 80
 GiB); see docs/slurm.md.

 --kmux-mem is per task: the node request is that times the tasks the job
 may put on one node: --ntasks-per-node, else ceil(ntasks / min nodes), else
 1.  When Slurm packs tasks unevenly this over-asks, never under-asks.

 Sites with a job_submit.lua of their own: call kmux_job_submit(job_desc)
 from their slurm_job_submit and keep the rest of this file as a module.
--]]

local MIB = 1048576
local NO_VAL = 4294967294
local NO_VAL16 = 65534

-- The declared bytes per task, or nil: only the plugin's own variable in
-- the control environment counts (a KMUX_MEM left in the user's shell does
-- not ask for memory).
local function kmux_mem_bytes(job_desc)
	local env = job_desc.spank_job_env
	if env == nil then
		return nil
	end
	for _, kv in pairs(env) do
		local v = string.match(kv, "^KMUX_MEM=(%d+)$") or
			  string.match(kv, "^SPANK_KMUX_MEM=(%d+)$")
		if v then
			return tonumber(v)
		end
	end
	return nil
end

local function valid(n, none)
	return n ~= nil and n > 0 and n < none
end

local function tasks_per_node(job_desc)
	if valid(job_desc.ntasks_per_node, NO_VAL16) then
		return job_desc.ntasks_per_node
	end
	if valid(job_desc.num_tasks, NO_VAL) then
		local nodes = job_desc.min_nodes
		if not valid(nodes, NO_VAL) then
			nodes = 1
		end
		return math.ceil(job_desc.num_tasks / nodes)
	end
	return 1
end

-- tres_per_node without any kmuxmem entry, then ours.  Entries look like
-- "gres:shard:1" (22.05) or "gres/shard:1"; the kmuxmem one follows the
-- style of those already there.
local function with_kmuxmem(tres, mib)
	local kept, style = {}, "gres:"
	if tres ~= nil and tres ~= "" then
		for item in string.gmatch(tres, "[^,]+") do
			if string.find(item, "^gres/") then
				style = "gres/"
			end
			if not string.find(item, "kmuxmem") then
				table.insert(kept, item)
			end
		end
	end
	table.insert(kept, style .. "kmuxmem:" .. string.format("%d", mib))
	return table.concat(kept, ",")
end

function kmux_job_submit(job_desc)
	local bytes = kmux_mem_bytes(job_desc)
	if bytes == nil or bytes <= 0 then
		return slurm.SUCCESS
	end
	local mib = math.ceil(bytes / MIB) * tasks_per_node(job_desc)
	local tres = with_kmuxmem(job_desc.tres_per_node, mib)
	slurm.log_info("kmux: job of uid %d: --kmux-mem %d bytes per task, " ..
		       "tres_per_node %s", job_desc.user_id, bytes, tres)
	job_desc.tres_per_node = tres
	return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	return kmux_job_submit(job_desc)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
