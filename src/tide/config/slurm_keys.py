"""slurm.conf keys tide reads, keys it keeps without using, and the rest.

Keys tide does not use are kept in SchedulerConfig.extra (spelled as below)
so nothing is lost on import. Daemon plumbing (paths, ports, logging, auth)
is kept silently; keys that change scheduling in Slurm but are not modelled
by tide get one warning each, so an administrator knows what differs.
Names from slurm.conf(5), Slurm 22.05; comparisons are case-insensitive.
"""

from __future__ import annotations

import difflib


def _words(text: str) -> list[str]:
    return text.split()

# Read into SchedulerConfig / the cluster (see slurm_sched.py, slurm_conf.py).
HANDLED = _words("""
ClusterName SchedulerType SchedulerParameters PriorityType PriorityWeightAge
PriorityWeightFairshare PriorityWeightJobSize PriorityWeightPartition PriorityWeightQOS
PriorityWeightAssoc PriorityWeightTRES PriorityDecayHalfLife PriorityMaxAge PriorityFavorSmall
PriorityFlags TopologyPlugin SelectType SelectTypeParameters PreemptType PreemptMode
PreemptExemptTime KillWait MessageTimeout
""")

# Kept silently: no effect on what runs where or when.
PLUMBING = _words("""
AccountingStorageBackupHost AccountingStorageExternalHost AccountingStorageHost
AccountingStorageLoc AccountingStorageParameters AccountingStoragePass AccountingStoragePort
AccountingStorageTRES AccountingStorageType AccountingStorageUser AccountingStoreFlags
AccountingStoreJobComment AcctGatherEnergyType AcctGatherFilesystemType
AcctGatherInterconnectType AcctGatherNodeFreq AcctGatherProfileType AllowSpecResourcesUsage
AuthAltParameters AuthAltTypes AuthInfo AuthType BackupAddr BackupController
BatchStartTimeout BcastExclude BcastParameters BurstBufferType CacheGroups CheckpointType
CliFilterPlugins CommunicationParameters CompleteWait ControlAddr ControlMachine
CoreSpecPlugin CpuFreqDef CpuFreqGovernors CredType CryptoType DebugFlags DefaultStorageHost
DefaultStorageLoc DefaultStoragePass DefaultStoragePort DefaultStorageType DefaultStorageUser
DisableRootJobs EioTimeout Epilog EpilogMsgTime EpilogSlurmctld ExtSensorsFreq ExtSensorsType
FastSchedule FederationParameters FirstJobId GetEnvTimeout GpuFreqDef GresTypes
GroupUpdateForce GroupUpdateTime HealthCheckInterval HealthCheckNodeState HealthCheckProgram
InactiveLimit InteractiveStepOptions JobAcctGatherFrequency JobAcctGatherParams
JobAcctGatherType JobCheckpointDir JobCompHost JobCompLoc JobCompParams JobCompPass
JobCompPort JobCompType JobCompUser JobContainerType JobCredentialPrivateKey
JobCredentialPublicCertificate JobFileAppend JobSubmitPlugins KillOnBadExit
LaunchParameters LaunchType Layouts LogTimeFormat MailDomain MailProg MaxDBDMsgs MaxJobCount
MaxJobId MaxStepCount MCSParameters MCSPlugin MemLimitEnforce MinJobAge
MpiDefault MpiParams NodeFeaturesPlugins PluginDir PlugStackConfig PowerParameters PowerPlugin
PrEpParameters PrEpPlugins PrivateData ProctrackType Prolog
PrologEpilogTimeout PrologFlags PrologSlurmctld PropagatePrioProcess PropagateResourceLimits
PropagateResourceLimitsExcept RebootProgram ReconfigFlags ResumeFailProgram ResumeProgram
ResumeRate ResumeTimeout ResvEpilog ResvProlog ReturnToService RoutePlugin
SallocDefaultCommand ScronParameters SlurmctldAddr SlurmctldDebug SlurmctldHost
SlurmctldLogFile SlurmctldParameters SlurmctldPidFile SlurmctldPlugstack SlurmctldPort
SlurmctldPrimaryOffProg SlurmctldPrimaryOnProg SlurmctldSyslogDebug SlurmctldTimeout
SlurmdDebug SlurmdLogFile SlurmdParameters SlurmdPidFile SlurmdPort SlurmdSpoolDir
SlurmdSyslogDebug SlurmdTimeout SlurmdUser SlurmSchedLogFile SlurmSchedLogLevel SlurmUser
SrunEpilog SrunPortRange SrunProlog StateSaveLocation SuspendExcNodes SuspendExcParts
SuspendExcStates SuspendProgram SuspendRate SuspendTime SuspendTimeout SwitchParameters
SwitchType TaskEpilog TaskPlugin TaskPluginParam TaskProlog TCPTimeout TmpFS TrackWCKey
TreeWidth UnkillableStepProgram UnkillableStepTimeout UsePAM VSizeFactor WaitTime
X11Parameters
""")

# Change scheduling in Slurm; tide keeps them but does not act on them (warned).
NOT_MODELLED = _words("""
AccountingStorageEnforce DefCpuPerGPU DefMemPerCPU DefMemPerGPU DefMemPerNode
DependencyParameters EnforcePartLimits FairShareDampeningFactor JobRequeue Licenses
MaxArraySize MaxBatchRequeue MaxMemPerCPU MaxMemPerNode MaxNodeCount MaxTasksPerNode
OverTimeLimit PreemptParameters PriorityParameters
PrioritySiteFactorParameters PrioritySiteFactorPlugin PriorityUsageResetPeriod RequeueExit
RequeueExitHold ResvOverRun SchedulerTimeSlice TopologyParam
""")

_CANON = {k.lower(): k for k in HANDLED + PLUMBING + NOT_MODELLED}
_PLUMBING = {k.lower() for k in PLUMBING}
_NOT_MODELLED = {k.lower() for k in NOT_MODELLED}


def canonical(key: str) -> str:
    """The documented spelling of a known key, else the key as written."""
    return _CANON.get(key.lower(), key)


def is_plumbing(key: str) -> bool:
    return key.lower() in _PLUMBING


def is_not_modelled(key: str) -> bool:
    return key.lower() in _NOT_MODELLED


def suggest(key: str, known: list[str] | None = None) -> str:
    """' (did you mean X?)' for a likely typo, else ''."""
    pool = known if known is not None else list(_CANON.values())
    lower = {k.lower(): k for k in pool}
    close = difflib.get_close_matches(key.lower(), list(lower), n=1, cutoff=0.8)
    return f" (did you mean {lower[close[0]]}?)" if close else ""
