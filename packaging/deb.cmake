# The fabricmon .deb: `cpack -G DEB` in a build directory (any configure
# prefix: cpack installs with prefix /usr into its staging dir, and the unit's
# ExecStart is rendered at install time, see daemon/CMakeLists.txt).
# Included last by the top-level CMakeLists.txt, once every target exists.
#
# One package, `fabricmon`: the daemon, fabricmon-sim, fabricmon-mad,
# fabricmon-bench and libfabricmon_osm.so when built, the unit, the udev rule and sysusers.d
# entry (group `fabricmon` owns /dev/infiniband/umad*), the example config as
# the conffile /etc/fabricmon/fabricmon.yaml, /etc/default/fabricmon (the
# unit's extra arguments) as a conffile, dashboards, rules and runbooks
# under /usr/share/fabricmon/, the VictoriaMetrics deployment
# (deploy/victoriametrics/: units, defaults, scrape configs; installed by
# hand where wanted, docs/deploy.md) as /usr/share/fabricmon/victoriametrics/,
# packaging/fleet.yaml as an example config.
# Depends come from dpkg-shlibdeps. The
# maintainer scripts are in packaging/debian/ (what they do: docs/install.md).
include(GNUInstallDirs)
# cpack (and `make install`) install what is built instead of building the
# whole tree (every test) first: build the binaries, then package.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

foreach(tool fabricmon-sim fabricmon-bench fabricmon-mad fabricmon-mad-broker
             fabricmon-locate)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

set(FABRICMON_UDEV_RULES_DIR "lib/udev/rules.d"
    CACHE PATH "Where to install 70-fabricmon-umad.rules (relative: under the prefix)")
install(FILES ${CMAKE_SOURCE_DIR}/systemd/70-fabricmon-umad.rules
        DESTINATION ${FABRICMON_UDEV_RULES_DIR})
install(FILES ${CMAKE_SOURCE_DIR}/systemd/fabricmon.sysusers
        DESTINATION lib/sysusers.d RENAME fabricmon.conf)

set(share ${CMAKE_INSTALL_DATADIR}/fabricmon)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/dashboards/grafana/
        DESTINATION ${share}/dashboards)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/dashboards/prometheus/
        DESTINATION ${share}/rules)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/dashboards/alertmanager/
        DESTINATION ${share}/alertmanager)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/runbooks/
        DESTINATION ${share}/runbooks)
# Shipped as files, not as active units: the vmagent/vmalert units run on
# the metrics hosts, not on every node this package monitors.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/deploy/victoriametrics/
        DESTINATION ${share}/victoriametrics)
# The series-budget profile (docs/series-budget.md), next to the example
# config: copied to /etc/fabricmon by whoever wants it, never a conffile.
install(FILES ${CMAKE_SOURCE_DIR}/packaging/fleet.yaml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fabricmon)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "fabricmon maintainers <fabricmon@localhost>"
    CACHE STRING "Maintainer field of the .deb")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "InfiniBand/RoCE fabric metrics exporter for Prometheus")
set(CPACK_PACKAGE_DESCRIPTION
    "fabricmon polls InfiniBand and RoCE port counters, subnet manager state
and the switch ports of the fabric, and exports them to Prometheus on :10915.
Ships a systemd unit, Grafana dashboards, alerting rules and runbooks.")
# Stage with DESTDIR and prefix /usr: /etc/fabricmon is absolute and must
# land in the package, never in the build machine's /etc.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# deb-systemd-helper/-invoke in the maintainer scripts; the user and group
# come from systemd-sysusers, or adduser where systemd is absent.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "init-system-helpers (>= 1.54), systemd | adduser")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus, opensm, infiniband-diags")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles
     "${FABRICMON_CONFIG_DIR}/fabricmon.yaml\n/etc/default/fabricmon\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/debian/postinst
    ${CMAKE_SOURCE_DIR}/packaging/debian/prerm
    ${CMAKE_SOURCE_DIR}/packaging/debian/postrm
    ${CMAKE_BINARY_DIR}/packaging/conffiles)
include(CPack)
