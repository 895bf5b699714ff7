# How ctest schedules the long tests (issue 44 item 1). Read by ctest, not
# by cmake: tests/CMakeLists.txt includes it from the build's test list,
# after every test is known and has its default of 2 slots.
#
# scripts/test.sh runs ctest -j 2*nproc: two slots per core. Each row is
#   test  slots  cost
# slots: PROCESSORS, the ctest slots the test holds = ceil(2 * CPU / wall),
#   1 to 4: a test that waits (Prometheus evaluation intervals, alert
#   `for:`s, simulator timelines) for more than half its wall holds 1, so
#   two of them share a core; a CPU-bound one 2 (a core); one that keeps
#   more than a core busy (cpack + dpkg, clang's parallel analysis) 4.
#   "not measured": the default, 2, as for every test not listed.
# cost: COST, its wall seconds at -j2 (Testing/Temporary/CTestCostData.txt
#   of 2026-12-06; AlertsTour measured), so ctest starts the longest first
#   also on a fresh clone, which has no cost data (ctest would start them
#   in declaration order). A COST set here wins over the learned average.
# CPU is user + sys of the test and every descendant (scripts/
# cpu_vs_wall.py), measured with 4 tests at a time on the shared 2-core
# machine: docs/measurements.md, "Test wall time". A row naming a test that
# no longer exists fails test_schedule (tests/schedule/check.py): ctest
# would ignore it silently.
set(fabric_test_schedule
  AlertsTour.EveryFaultIsOneNotificationGroup                         1   526  # cpu/wall 0.23
  SystemdNspawnTest.DebInstallsAndTheUnitRunsUnderSystemd             2   348  # WatchdogSec=3s inside: a core; fresh clone (debootstrap)
  AlertsE2eTest.EveryRuleAndPanelExpressionReturnsDataInSomeScenario  1   210  # cpu/wall 0.36
  AlertsE2eTest.EveryRunbookQueryReturnsDataInSomeScenario            1   169  # cpu/wall 0.31
  SimDemo.SmAndProbeLossAlertsFire                                    1   141  # cpu/wall 0.11
  LocateProbeIbsim.FatTreeNoneOneAndTwoBadCables                      2   133  # cpu/wall 0.82
  AlertsE2eTest.DyingCableAlertsInOrderOnlyOnItsLinks                 1    94  # cpu/wall 0.26
  VmDeployTest.EveryTargetScrapedOnceAlsoAfterAVmagentRestarts        2    69  # cpu/wall 0.80
  AlertsE2eTest.BadCableAlertsNameTheJobsOnItsHost                    1    65  # cpu/wall 0.50 at 23 s; job 503 now runs 60 s
  LocateProbeIbsim.RandomTopologyOneBadCable                          2    54  # cpu/wall 0.88
  ProbeEcmpNetns.LocatorRanksTheLossyLinkFirst                        1    51  # cpu/wall 0.37
  DebPackage.InstallsUpgradesRemovesAndPurgesWithItsMaintainerScripts 4    50  # cpu/wall 1.57
  GnmiCongestionTest.RoceSwitchRootAndUpstreamVictimsThroughTheRules  1    50  # cpu/wall 0.32
  MixedFabricE2e.AlertForTheMixedHostOnlyAndInventoryCounts           1    50  # cpu/wall 0.25
  VmDeployTest.RecordingRulesGiveTheSameValuesAsPrometheus            2    43  # cpu/wall 0.63
  SimDemo.PrintsAlertsAsTheyFireWithTheirRunbook                      2    43  # demo.sh shutdown outlasted 30 s when starved
  ProbeEcmpNetns.WithoutAFaultNoLinkStandsOut                         1    43  # cpu/wall 0.24
  GnmiSwitchTest.ValuesReachPrometheusAndBadSwitchesCostOnlyTheirOwn  1    38  # cpu/wall 0.12
  AlertsE2eTest.SteadyFiresNothing                                    1    32  # cpu/wall 0.33
  SimPrometheus.RatesMatchOfferedLoadAndHotspotIsVisible              2    30  # its rates drifted 7 % when starved
  SimulateOnceTest.LiveFailoverIsCountedAndHungMasterStalls           1    29  # cpu/wall 0.08
  GnmiSwitchTest.TlsWithClientCertificateAndRefusals                  1    23  # cpu/wall 0.15
  HttpServerTest.DistributedFloodDoesNotKeepARotatedPasswordOut       4    20  # cpu/wall 1.58
  ProbeNetnsTest.LossEqualsTheDropRate                                1    19  # cpu/wall 0.41
  ProbeEcmpNetns.TracedPathsEqualTheKernelsMultipathChoice            2    17  # cpu/wall 0.66
  LinkHealthIbsim.RepeatedUnlinkReLinkFiresFlappingForThatPortOnly    1    16  # cpu/wall 0.20
  ProbeNetnsTest.MedianRttMovesWithTheRelayDelay                      2    15  # RUN_SERIAL (tests/CMakeLists.txt); cpu/wall 0.38
  AlertsE2eTest.SmFailoverFiresOnceWhenTheMasterIsKilled              1    15  # cpu/wall 0.47
  OsmOpenSmTest.TheDaemonExportsOpenSmEventsAndSurvivesARestart       1    13  # cpu/wall 0.09
  SimCongestion.PfcStormOriginIsTheRootInPrometheus                   2    13  # cpu/wall 0.58
  LinkHealthIbsim.ErrorOnOneSwitchFiresUnresponsiveAndSweepGoesOn     1    11  # cpu/wall 0.17
  AlertsE2eTest.LinkDegradedOnMadsFiresDowngradedForItsLinkOnly       2    11  # not measured
  LinkHealthDowngradedIbsim.SpeedBelowBothEndsFiresForThatLinkOnly    2    10  # not measured
  AlertsE2eTest.LinkDegradedFiresForTheDegradedPort                   2    10  # not measured
  AlertsE2eTest.CounterSaturationFiresOneAlertPerPort                 2    10  # not measured
  SeriesCapTest.OpensmPortFloodStaysWithinTheCapAndALowerCapFrees     2    10  # not measured
  SmSwitchPescIbsim.PescAtTheSmSwitchLidKillsOpenSm                   2     9  # not measured
  ProbeNetnsTest.ForgedPortUnreachablesAreNotLoss                     1     9  # cpu/wall 0.40
  RoutesIbsim.AgreesAfterOpenSmRoutedAroundAnUnlinkedUplink           2     8  # not measured
  LocateIbsim.NamesTheLinkTheLossyPairsShare                          2     8  # not measured
  OsmOpenSmTest.EventsAndExactPerfMgrCountersFromARealOpenSm          2     8  # not measured
  ProbeNetnsTest.DeadPeerIsLoss                                       1     8  # cpu/wall 0.39
  DaemonTest.SighupRereadsProbePeersFile                              2     8  # not measured
  SimCongestion.SlowReceiverIsTheRootAndItsFeedersItsVictims          2     7  # not measured
  DaemonTest.StopsFeedingTheWatchdogWhenEveryCollectionIsStuck        2     7  # not measured
  HttpDaemonTest.PrometheusScrapesOverTlsWithBasicAuth                2     7  # not measured
  SmFabricIbsim.KilledMasterFailsOverToTheStandby                     2     6  # not measured
  ProbeUnansweredTest.FileSdTargetsAreProbedOnTheProbePort            2     6  # not measured
  SmSwitchPescIbsim.DaemonSweepsWithPescAndOpenSmSurvives             2     6  # not measured
  DaemonTest.DaemonReportsHungCollectorKeepsServingAndStops           2     6  # not measured
  RoutesIbsim.EveryHostPairAgreesWithIbtracert                        2     6  # not measured
  SlurmRealTest.RunningJobsAreExportedAndACancelledOneDisappears      2     6  # not measured
  FabricTreeTest.CompactInputClassifiesAsEveryPortDoes                2     5  # not measured
  SimCongestion.QuantumRootWaitPasses2To32WithoutSaturating           2     5  # not measured
  ProbeNetnsTest.WrongKeyGetsNoAnswersAndIsCountedBadMac              2     5  # cpu/wall 0.52
  SlurmRealTest.BenchRunInsideAnAllocationRecordsTheJob               2     5  # not measured
  ProbeNetnsTest.DefaultDaemonExportsAtMostEightSeriesPerPair         1     5  # cpu/wall 0.46
  ProbeNetnsTest.PairInfoNamesThePortsBothEndsUse                     2     4  # cpu/wall 0.52
  ProbeNetnsTest.ReplayedProbeIsRejected                              1     4  # cpu/wall 0.46
)
list(LENGTH fabric_test_schedule n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 3)
  math(EXPR j "${i} + 1")
  math(EXPR k "${i} + 2")
  list(GET fabric_test_schedule ${i} name)
  list(GET fabric_test_schedule ${j} slots)
  list(GET fabric_test_schedule ${k} cost)
  set_tests_properties(${name} PROPERTIES PROCESSORS ${slots} COST ${cost})
endforeach()
