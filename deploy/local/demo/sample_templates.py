"""Text pools for `make_sample.py`: news-style sentence templates in English and Chinese.

Every outlet, agency, person and event here is invented. `{slot}` placeholders are filled
per article (see `make_sample.context`); a topic's `slots` add topic-specific choices.
Each article draws a title, a lede and a random subset of the body and quote sentences,
so two articles on the same topic share only part of their wording.
"""

from __future__ import annotations

EN_CITIES = [
    ("Portland", "Oregon"),
    ("Leeds", "England"),
    ("Adelaide", "South Australia"),
    ("Winnipeg", "Manitoba"),
    ("Austin", "Texas"),
    ("Glasgow", "Scotland"),
    ("Denver", "Colorado"),
    ("Auckland", "New Zealand"),
    ("Cork", "Ireland"),
    ("Halifax", "Nova Scotia"),
    ("Columbus", "Ohio"),
    ("Bristol", "England"),
    ("Tucson", "Arizona"),
    ("Ottawa", "Ontario"),
    ("Perth", "Western Australia"),
    ("Sacramento", "California"),
    ("Cardiff", "Wales"),
    ("Raleigh", "North Carolina"),
    ("Brisbane", "Queensland"),
    ("Milwaukee", "Wisconsin"),
    ("Boise", "Idaho"),
    ("Hamilton", "Ontario"),
    ("Norwich", "England"),
    ("Savannah", "Georgia"),
]
EN_FIRST = [
    "Maria",
    "James",
    "Aisha",
    "Daniel",
    "Priya",
    "Thomas",
    "Elena",
    "Samuel",
    "Grace",
    "Michael",
    "Fatima",
    "Robert",
    "Hannah",
    "David",
    "Sofia",
    "Kevin",
    "Laura",
    "Omar",
    "Rachel",
    "Patrick",
    "Mei",
    "Jonathan",
    "Claire",
    "Victor",
    "Nadia",
    "Brian",
    "Ines",
    "George",
    "Yuki",
    "Alan",
]
EN_LAST = [
    "Alvarez",
    "Thompson",
    "Okafor",
    "Lindqvist",
    "Patel",
    "Brennan",
    "Nakamura",
    "Weber",
    "Castillo",
    "Hughes",
    "Rahman",
    "Fischer",
    "Doyle",
    "Moreau",
    "Kowalski",
    "Grant",
    "Sutherland",
    "Haddad",
    "Ferreira",
    "Chen",
    "O'Neill",
    "Mbeki",
    "Larsen",
    "Quinn",
    "Romero",
    "Walsh",
    "Ibrahim",
    "Foster",
    "Nguyen",
    "Bauer",
]
EN_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
EN_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
# Invented outlets: (name, domain).
EN_OUTLETS = [
    ("The Northern Gazette", "northerngazette.example.com"),
    ("Coastal Times", "coastaltimes.example.com"),
    ("Metro Wire", "metrowire.example.net"),
    ("The Daily Ledger", "dailyledger.example.co.uk"),
    ("Valley Post", "valleypost.example.com"),
    ("Harbor Courier", "harborcourier.example.org"),
]
EN_AGENCIES = ["Meridian Press", "Keystone News Service", "Atlas Wire"]

EN_TOPICS: dict[str, dict[str, list[str] | dict[str, list[str]]]] = {
    "budget": {
        "titles": [
            "{city} council approves {money1} budget with boost for buses",
            "{city} lawmakers back spending plan after marathon session",
            "Budget vote in {city} funds transit, delays library repairs",
        ],
        "ledes": [
            "The {city} city council on {weekday} approved a {money1} operating budget for the "
            "coming fiscal year, voting {small1}-{small2} after more than seven hours of debate "
            "that stretched past midnight.",
            "Councillors in {city} narrowly passed a {money1} spending plan on {weekday}, setting "
            "aside new money for bus service while postponing several long-awaited building "
            "repairs.",
            "After weeks of public hearings, {city}'s council signed off on a {money1} budget on "
            "{weekday} that raises property taxes by {pct1}% and pays for {num1} more bus "
            "drivers.",
        ],
        "body": [
            "The plan adds {money2} for public transport, enough to restore weekend service on "
            "{num1} routes that were cut during the pandemic.",
            "Property owners will see an average increase of about ${num2} a year on their tax "
            "bills, according to estimates from the city's finance department.",
            "Opponents argued the city should have drawn on its reserve fund instead of raising "
            "taxes at a time when many households are struggling with higher rents and grocery "
            "prices.",
            "Council member {p2}, who voted against the budget, said the process had been rushed "
            "and that residents had too little time to review the final numbers.",
            "The budget also funds {num3} new affordable housing units and a pilot program that "
            "sends mental health workers, rather than police, to some emergency calls.",
            "Library advocates packed the public gallery, holding signs that urged members to "
            "reverse a decision to delay the renovation of the central branch.",
            "City staff said the renovation could still begin next year if a state grant "
            "application is approved in the spring.",
            "Mayor {p1} is expected to sign the budget within the week. The new fiscal year "
            "begins on July 1.",
            "Union leaders representing transit workers welcomed the added hiring but warned that "
            "recruitment has been slow because of low starting wages.",
            "Several speakers during public comment raised concerns about road maintenance, "
            "noting that the backlog of repaving projects has grown for three straight years.",
            "The finance committee will publish a line-by-line breakdown of the budget on the "
            "city's website by the end of the month.",
        ],
        "quotes": [
            '"This budget is not perfect, but it puts buses back on the street and keeps our '
            'promises on housing," Mayor {p1} said in a statement.',
            '"We are asking families to pay more without showing them what they get in '
            "return,\" said {p2}, who represents the city's {ward} ward.",
            "\"Every route we restore means someone can get to work or a doctor's appointment "
            'without spending two hours on the road," said {p3}, a spokesperson for the transit '
            "agency.",
        ],
        "slots": {"ward": ["north", "east", "riverside", "central", "west", "harbour"]},
    },
    "rates": {
        "titles": [
            "Central bank holds rates at {pct1}%, signals cuts later this year",
            "Policymakers keep borrowing costs steady as inflation cools to {pct2}%",
            "Rate decision: officials stay cautious despite slowing price growth",
        ],
        "ledes": [
            "The central bank left its benchmark interest rate unchanged at {pct1}% on {weekday}, "
            "saying it needed more evidence that inflation was on a sustained path back to "
            "target before it could begin lowering borrowing costs.",
            "Policymakers held interest rates steady for a {ordinal} consecutive meeting on "
            "{weekday}, as annual inflation eased to {pct2}% but wage growth remained stronger "
            "than expected.",
        ],
        "body": [
            "The decision was widely expected by economists, although markets had priced in a "
            "small chance of a cut after weaker retail sales figures last month.",
            "In its statement, the bank said the labour market was cooling gradually, with job "
            "vacancies falling and the unemployment rate edging up to {pct3}%.",
            "Governor {p1} told reporters that the committee had discussed a range of options "
            "and that the vote had been {small1} to {small2} in favour of holding.",
            "Mortgage holders have faced sharply higher repayments since the bank began raising "
            "rates, and housing groups have urged officials to move faster.",
            "The currency slipped about {pct4}% against the U.S. dollar after the announcement, "
            "while government bond yields fell to their lowest level in {num1} weeks.",
            "Business groups said high borrowing costs were holding back investment, especially "
            "among small manufacturers that rely on bank credit.",
            "The bank's updated forecasts show inflation returning to its {target}% target by "
            "the second half of next year, slightly later than previously projected.",
            "Services inflation, which the bank watches closely because it reflects domestic "
            "price pressures, remained elevated at {pct5}%.",
            "Analysts at several large lenders now expect the first cut in {later_month}, with a "
            "further reduction before the end of the year.",
            "Consumer confidence improved for a {ordinal} month in a row, according to a survey "
            "published earlier in the week, helped by falling energy bills.",
        ],
        "quotes": [
            '"We have made good progress, but the job is not done," Governor {p1} said. "Cutting '
            'too early would risk undoing that progress."',
            '"The tone was a little softer than last time, and that is what markets were '
            'listening for," said {p2}, chief economist at {company}.',
            '"Households are still feeling the squeeze, even if the headline numbers look '
            'better," said {p3} of the {city} Chamber of Commerce.',
        ],
        "slots": {
            "ordinal": ["third", "fourth", "fifth", "sixth", "seventh"],
            "target": ["2"],
        },
    },
    "earnings": {
        "titles": [
            "{company} profit beats forecasts as cloud sales climb {pct3}%",
            "{company} shares jump after quarterly results top estimates",
            "{company} raises full-year outlook on strong demand",
        ],
        "ledes": [
            "{company} reported a {pct4}% rise in quarterly profit on {weekday}, beating analyst "
            "expectations as demand for its cloud software and data center services continued to "
            "grow.",
            "Shares of {company} rose nearly {pct2}% in after-hours trading on {weekday} after "
            "the company posted revenue of {money1} for the quarter and lifted its forecast for "
            "the full year.",
        ],
        "body": [
            "Net income came in at {money2}, or ${cents} a share, compared with {money3} a year "
            "earlier.",
            "Revenue from the company's cloud division grew {pct3}% and now accounts for more "
            "than a third of total sales.",
            "Analysts polled by a financial data provider had expected earnings of about "
            "${cents} a share on revenue slightly below the reported figure.",
            "The company said it would spend heavily on new data centers over the next two years "
            "to keep up with demand from customers building artificial intelligence tools.",
            "Chief executive {p1} told analysts on a conference call that enterprise customers "
            "were signing larger and longer contracts than in previous quarters.",
            "Sales of consumer devices, however, fell for a {ordinal} straight quarter, "
            "reflecting weak spending on smartphones and laptops.",
            "{company} also announced a new {money3} share buyback program and raised its "
            "quarterly dividend by {pct5}%.",
            "Operating margins improved to {num1}% from {num2}% a year ago, helped by cost cuts "
            "that included about {num3} job reductions announced in the spring.",
            "The company now expects full-year revenue growth in the low double digits, up from "
            "a previous forecast of high single digits.",
            "Some investors have questioned whether the surge in capital spending will pay off, "
            "pointing to rising depreciation costs.",
        ],
        "quotes": [
            '"Demand is broad-based, across industries and regions," {p1} said. "We are still '
            'early in this cycle."',
            '"The numbers were clean and the guidance was better than feared," said {p2}, an '
            "analyst at {company2}.",
            '"The question for the next few quarters is how much of this spending turns into '
            'profit," said {p3}, a portfolio manager in {city}.',
        ],
        "slots": {
            "ordinal": ["second", "third", "fourth", "fifth"],
            "cents": ["1.12", "0.87", "2.34", "1.76", "0.64", "3.05", "1.49"],
        },
    },
    "storm": {
        "titles": [
            "Storm knocks out power to {num3} homes across {region}",
            "Heavy rain and high winds batter {city}; flood warnings issued",
            "Clean-up begins in {city} after overnight storm",
        ],
        "ledes": [
            "A powerful storm swept across {region} overnight into {weekday}, bringing down trees "
            "and power lines and leaving about {num3} homes and businesses without electricity.",
            "Emergency crews in {city} worked through the night after torrential rain flooded "
            "streets and basements, with some areas recording more than {num1} millimetres of "
            "rain in just a few hours.",
        ],
        "body": [
            "Wind gusts of up to {num2} kilometres per hour were recorded at the airport, the "
            "strongest in the area for more than a decade, according to the weather service.",
            "The utility said most customers should have power restored by the end of the day, "
            "but warned that some rural areas could wait until the weekend.",
            "Several schools were closed and bus services were suspended on a number of routes "
            "because of fallen trees and debris.",
            "Police urged drivers to avoid unnecessary travel and never to drive through "
            "flooded roads, after two cars were swept off a low bridge near the river.",
            "Firefighters rescued {small1} people from vehicles trapped in floodwater, but no "
            "serious injuries were reported.",
            "The weather service kept a flood warning in place for the {river} River, which is "
            "expected to peak late on {weekday}.",
            "Residents in low-lying neighbourhoods spent the morning pumping water out of their "
            "homes and piling ruined furniture on the curb.",
            "Insurance companies said it was too early to estimate the cost of the damage, but "
            "claims were already coming in quickly.",
            "Forecasters said a second, weaker system could bring more rain later in the week, "
            "although winds were expected to be lighter.",
            "The city opened two emergency shelters at community centres for people who could "
            "not stay in their homes.",
        ],
        "quotes": [
            '"I have lived here for {num1} years and I have never seen the water come up this '
            'fast," said {p2}, whose garage flooded overnight.',
            '"Our crews are working around the clock, and we ask customers to stay well away '
            'from any downed lines," said {p3}, a spokesperson for the utility.',
            '"Please check on your neighbours, especially older residents who live alone," '
            "Mayor {p1} said at a morning briefing.",
        ],
        "slots": {"river": ["Willow", "Stone", "Grand", "Cedar", "Blackwater", "Elm"]},
    },
    "wildfire": {
        "titles": [
            "Wildfire near {city} forces evacuation of {num2} homes",
            "Crews gain ground on {city} wildfire as winds ease",
            "Firefighters battle blaze outside {city}",
        ],
        "ledes": [
            "A fast-moving wildfire burning in dry brush outside {city} forced the evacuation of "
            "about {num2} homes on {weekday}, as strong winds pushed the flames toward several "
            "rural subdivisions.",
            "Firefighters made progress against a wildfire near {city} on {weekday} as winds "
            "eased, although officials said the blaze was only {pct1}% contained.",
        ],
        "body": [
            "The fire has burned about {num3} hectares since it was first reported on "
            "{weekday2} afternoon, according to the state forestry agency.",
            "More than {num2} firefighters, supported by helicopters and air tankers, were "
            "assigned to the fire, officials said.",
            "At least {small1} structures have been destroyed, including several barns and "
            "outbuildings, though the number could rise as crews reach remote areas.",
            "The cause of the fire is under investigation. Officials said there had been no "
            "lightning in the area at the time it started.",
            "Smoke from the fire drifted over {city}, where health officials warned people with "
            "asthma or heart conditions to stay indoors.",
            "Evacuees gathered at a high school gymnasium, where volunteers handed out water, "
            "blankets and food.",
            "The region has received less than half of its normal rainfall this year, leaving "
            "grass and brush extremely dry.",
            "A highway that runs through the area was closed in both directions, and officials "
            "said it would remain shut at least until {weekday2}.",
            "Animal shelters opened their doors to pets and livestock from the evacuated "
            "properties.",
            "Fire managers said higher humidity overnight had helped slow the spread, but they "
            "expected winds to pick up again in the afternoon.",
        ],
        "quotes": [
            '"We had about ten minutes to grab what we could," said {p2}, who left with her two '
            "dogs and a box of family photos.",
            '"The terrain is steep and the fuels are very dry, which makes this a difficult '
            'fire," incident commander {p1} said.',
            '"If you are told to leave, leave. Do not wait to see the flames," said sheriff {p3}.',
        ],
        "slots": {},
    },
    "football": {
        "titles": [
            "{team1} beat {team2} {score1}-{score2} to move top of the table",
            "Late winner gives {team1} victory over {team2}",
        ],
        "ledes": [
            "{team1} moved to the top of the league table on {weekday} with a {score1}-{score2} "
            "win over {team2}, thanks to a late goal from substitute {p1}.",
            "A stoppage-time header from {p1} gave {team1} a {score1}-{score2} victory against "
            "{team2} in front of a sell-out crowd of {num3} on {weekday}.",
        ],
        "body": [
            "{team2} had taken the lead midway through the first half when {p2} curled a free "
            "kick over the wall and into the top corner.",
            "The home side dominated possession after the break but struggled to create clear "
            "chances against a well-organised defence.",
            "{team1}'s goalkeeper made a string of saves in the second half, including a "
            "diving stop to deny a penalty in the {minute}th minute.",
            "The equaliser came from a corner, with the ball bundled over the line after a "
            "scramble in the six-yard box.",
            "Manager {p3} made three substitutions with twenty minutes left, and the changes "
            "proved decisive.",
            "The result extends {team1}'s unbeaten run to {small1} matches in all competitions.",
            "{team2} finished the game with ten men after a defender was shown a second yellow "
            "card for a late challenge.",
            "Both sides now have a week off before the cup fixtures resume next weekend.",
            "Supporters stayed behind long after the final whistle to applaud the players on a "
            "lap of the pitch.",
            "The match was the first at the stadium since its new stand was completed, raising "
            "capacity by about {num2} seats.",
        ],
        "quotes": [
            '"We showed real character today. We never stopped believing," {p3} said after the '
            "match.",
            '"It is a hard one to take. We defended well for eighty-five minutes," said the '
            "{team2} captain.",
            '"I have dreamed about scoring a goal like that since I was a kid," said {p1}.',
        ],
        "slots": {
            "team1": [
                "Riverside Rovers",
                "Northgate United",
                "Harbour City",
                "Kingsbridge FC",
                "Ashford Athletic",
                "Millbrook Town",
            ],
            "team2": [
                "Eastfield Wanderers",
                "Port Vale Albion",
                "St. Marys Rangers",
                "Westmoor FC",
                "Crossley Celtic",
                "Redhill Town",
            ],
            "score1": ["2", "3", "2", "1"],
            "score2": ["1", "0", "1", "0"],
            "minute": ["52", "61", "67", "74", "78", "83"],
        },
    },
    "probe": {
        "titles": [
            "{mission} probe sends back first close-up images of icy moon",
            "Icy moon's cracked surface hints at hidden ocean, {mission} images show",
        ],
        "ledes": [
            "The {mission} probe has sent back its first close-up images of an icy moon in the "
            "outer solar system, revealing long cracks in the surface that scientists say could be "
            "signs of liquid water below.",
            "New images from the {mission} spacecraft show a web of ridges and fractures on the "
            "surface of an icy moon, strengthening the case for an ocean beneath its crust, "
            "scientists said on {weekday}.",
        ],
        "body": [
            "The spacecraft passed within {num3} kilometres of the surface during the flyby, "
            "the closest approach of its mission so far.",
            "The images were released at a news conference at the {city} research institute "
            "that built the probe's main camera.",
            "Some of the fractures stretch for hundreds of kilometres, and several appear to be "
            "geologically young, with few impact craters on top of them.",
            "Scientists think tidal forces from the giant planet the moon orbits keep its "
            "interior warm enough for water to stay liquid.",
            "The mission, which launched {small1} years ago, has been extended twice and is "
            "expected to continue operating until the end of the decade.",
            "Data from the flyby will take several weeks to download because of the great "
            "distance and the limited bandwidth of the probe's antenna.",
            "Engineers said the spacecraft was healthy and had enough fuel for at least {small2} "
            "more close passes.",
            "The team is especially interested in dark streaks along some cracks, which could be "
            "salts carried up from the ocean below.",
            "A spectrometer on board will try to measure the composition of the surface during "
            "the next flyby, scheduled for {later_month}.",
        ],
        "quotes": [
            '"These are the sharpest pictures we have ever had of this world," said {p1}, the '
            'mission\'s principal investigator. "Every image is a surprise."',
            '"A young, active surface is exactly what you would hope to see if there is water '
            'underneath," said planetary scientist {p2}.',
            '"We planned this flyby for six years, and it went better than we dared hope," said '
            "mission manager {p3}.",
        ],
        "slots": {"mission": ["Aurora", "Polaris", "Halcyon", "Tethys Explorer", "Voyant"]},
    },
    "exoplanet": {
        "titles": [
            "Astronomers spot water vapour on planet {num2} light-years away",
            "Telescope finds steamy atmosphere on distant 'super-Earth'",
        ],
        "ledes": [
            "Astronomers using a space telescope have detected water vapour in the atmosphere of "
            "a planet orbiting a star about {num2} light-years away, the team reported on "
            "{weekday}.",
            "A planet a little larger than Earth has an atmosphere rich in steam, according to "
            "observations published on {weekday} by a team led by researchers in {city}.",
        ],
        "body": [
            "The planet is roughly {small1} times the mass of Earth and orbits its star every "
            "{num1} days, placing it near the inner edge of the habitable zone.",
            "The team measured starlight filtered through the planet's atmosphere as it passed "
            "in front of its star, a technique known as transmission spectroscopy.",
            "Scientists cautioned that water vapour alone is not evidence of life, but said the "
            "planet was among the most promising targets for follow-up observations.",
            "The host star is a small, cool red dwarf, which makes the faint signal of the "
            "planet's atmosphere easier to pick out.",
            "The findings were published in a peer-reviewed journal after months of checks to "
            "rule out contamination from star spots.",
            "Researchers plan to use ground-based telescopes to confirm the measurements over "
            "the next several months.",
            "Hints of methane were also found, although the team said that signal was not yet "
            "strong enough to claim a detection.",
            "More than {num3} planets have now been confirmed outside the solar system, but only "
            "a handful have had their atmospheres studied in detail.",
        ],
        "quotes": [
            '"We have to be careful not to get ahead of the data," said {p2}, an astrophysicist '
            "who was not involved in the study.",
            '"It tells us that water is common in planetary systems, which is exciting," said '
            "co-author {p3}.",
            '"This is the kind of planet we built the telescope to study," said lead author {p1}.',
        ],
        "slots": {},
    },
    "health": {
        "titles": [
            "Daily walks linked to {pct3}% lower risk of heart disease, study finds",
            "Brisk walking protects the heart even without other exercise, {city} study says",
        ],
        "ledes": [
            "People who walked at least {num1} minutes a day had a {pct3}% lower risk of heart "
            "disease over a decade than those who rarely walked, according to a large study "
            "published on {weekday}.",
            "Adults who walked briskly for about half an hour a day were markedly less likely to "
            "develop heart disease, even if they did no other exercise, researchers in {city} "
            "reported this week.",
        ],
        "body": [
            "The researchers followed about {num3} adults for an average of {small1} years, "
            "using wearable devices to track their activity.",
            "The benefit appeared even among participants who did no other exercise, suggesting "
            "that modest amounts of movement can make a difference.",
            "The study was observational, meaning it cannot prove that walking itself caused the "
            "lower risk, the authors noted.",
            "Participants who walked faster saw a larger benefit than those who walked the same "
            "distance at a slower pace.",
            "The findings are consistent with current guidelines, which recommend at least 150 "
            "minutes of moderate activity a week.",
            "The work was funded by a national health research council and a university "
            "foundation, with no industry involvement.",
            "Doctors not involved in the research said the results were encouraging but that "
            "diet, sleep and smoking remain major factors.",
            "The team plans a randomised trial next year to test whether a structured walking "
            "programme reduces blood pressure in older adults.",
            "Researchers adjusted for age, income, smoking and body weight, and the association "
            "remained strong.",
        ],
        "quotes": [
            '"You do not need a gym membership to protect your heart," said lead author {p1}, '
            "a cardiologist at {city} University Hospital.",
            '"This is a message people can act on tomorrow morning," said {p2}, a public '
            "health researcher.",
            '"The effect size is meaningful, but we should be cautious about cause and '
            'effect," said {p3}, who reviewed the study.',
        ],
        "slots": {},
    },
    "breach": {
        "titles": [
            "{company} says hackers accessed data of {num3} customers",
            "{company} discloses cyberattack, urges password resets",
            "Data breach at {company} exposes names and email addresses",
        ],
        "ledes": [
            "{company} said on {weekday} that hackers had gained access to a database containing "
            "the names, email addresses and phone numbers of about {num3} customers.",
            "{company} has urged customers to reset their passwords after detecting what it "
            "called unauthorised activity on one of its internal systems.",
        ],
        "body": [
            "The company said payment card numbers and passwords were stored separately and "
            "there was no evidence they had been taken.",
            "The intrusion was discovered on {weekday2} during a routine security review, and "
            "the affected system was taken offline within hours.",
            "{company} said it had notified data protection regulators and was working with an "
            "outside cybersecurity firm to investigate.",
            "Security researchers said the stolen information could be used in phishing "
            "campaigns, in which criminals send convincing fake messages to trick people.",
            "Customers will be offered {small1} months of free credit monitoring, the company "
            "said.",
            "The company did not say how the attackers got in, but a person familiar with the "
            "matter said a contractor's login had been compromised.",
            "Shares of {company} fell about {pct2}% in early trading after the announcement.",
            "It is the second security incident at the company in less than two years.",
            "Regulators can impose fines of up to {pct1}% of annual turnover for serious "
            "failures to protect personal data.",
        ],
        "quotes": [
            '"We sincerely apologise to our customers and take the protection of their data '
            'extremely seriously," {company} said in a statement.',
            '"Be suspicious of any message that asks you to click a link or confirm your '
            'details," said {p2}, a security analyst.',
            '"Companies keep telling us they take security seriously, and then this happens '
            'again," said {p3} of a consumer rights group.',
        ],
        "slots": {},
    },
    "housing": {
        "titles": [
            "Home prices in {city} fall for {ordinal} month as rates bite",
            "First-time buyers return to {city} market as prices ease",
        ],
        "ledes": [
            "Average home prices in {city} fell {pct4}% in {last_month}, the {ordinal} monthly decline "
            "in a row, as higher mortgage rates continued to weigh on demand, an industry report "
            "showed on {weekday}.",
            "First-time buyers are returning to the {city} housing market as prices soften, with "
            "the typical home now {pct3}% cheaper than at its peak, figures released on {weekday} "
            "showed.",
        ],
        "body": [
            "Sales volumes were down {pct3}% from a year earlier, while the number of homes "
            "listed for sale rose to its highest level since {year_past}.",
            "Estate agents said buyers were taking longer to make decisions and were more "
            "willing to negotiate on price.",
            "The typical home now sells for about {money2}, still well above levels seen before "
            "the pandemic.",
            "Construction of new homes has slowed, with developers citing higher financing and "
            "labour costs.",
            "Renters' groups called for stronger protections, including limits on how much "
            "landlords can raise rents at renewal.",
            "The city has set a target of building {num3} new homes over the next five years, "
            "but is behind schedule.",
            "First-time buyers made up a larger share of purchases than a year ago, helped by "
            "softer prices and a government deposit scheme.",
            "Economists expect prices to stabilise later in the year if interest rates begin to "
            "fall as markets anticipate.",
            "Vacancy rates remained below {pct5}%, far below the level considered healthy for a "
            "balanced market.",
        ],
        "quotes": [
            '"Buyers have the upper hand for the first time in years," said {p1}, a real '
            "estate agent in {city}.",
            '"People are paying half their income in rent. That is not sustainable," said '
            "{p2}, who leads a tenants' association.",
            '"We need to build more, and we need to build faster," said housing councillor {p3}.',
        ],
        "slots": {
            "ordinal": ["third", "fourth", "fifth", "sixth"],
            "year_past": ["2015", "2016", "2019", "2012"],
        },
    },
    "strike": {
        "titles": [
            "{city} rail workers stage {small1}-day strike, disrupting commuters",
            "Trains cancelled across {region} as rail staff walk out over pay",
        ],
        "ledes": [
            "Thousands of train drivers and station staff across {region} walked off the job on "
            "{weekday} in a dispute over pay and working hours, cancelling nearly all services.",
            "Rail workers began a {small1}-day strike on {weekday}, cancelling most trains in "
            "and out of {city} and leaving commuters scrambling for alternatives.",
        ],
        "body": [
            "The union is seeking a {pct3}% pay rise over two years, while management has "
            "offered {pct1}%.",
            "Picket lines formed outside the main entrances early in the morning, with workers "
            "holding placards and passing drivers honking in support.",
            "A skeleton timetable of about one train an hour ran on the busiest line, staffed by "
            "managers and non-union employees.",
            "Talks broke down late on {weekday2} after more than ten hours of negotiations.",
            "Officials advised travellers to work from home if possible and warned that roads "
            "into the city would be unusually busy.",
            "The union says staff shortages have left many workers covering extra shifts and rest "
            "days, leading to burnout and high turnover.",
            "Management said the offer was the best it could afford without cutting services, "
            "and urged the union to return to the table.",
            "It is the {ordinal} strike in the dispute this year, and further action has been "
            "scheduled for next month.",
            "A mediator has been appointed, and both sides said they were willing to meet again "
            "later in the week.",
        ],
        "quotes": [
            '"We are not striking because we want to. We are striking because we have to," '
            "said {p1}, a union representative.",
            '"We understand the frustration, but this action hurts the passengers who rely on '
            'us," said {p2}, a spokesperson for the rail operator.',
            '"I will lose a day\'s pay getting to work, but I support them," said commuter {p3}.',
        ],
        "slots": {"ordinal": ["second", "third", "fourth"]},
    },
    "energy": {
        "titles": [
            "Offshore wind farm near {city} approved after long review",
            "Regulators back {num1}-turbine wind farm off {region} coast",
        ],
        "ledes": [
            "Regulators on {weekday} approved an offshore wind farm off the coast near {city}, "
            "clearing the way for construction of {num1} turbines capable of powering about "
            "{num3} homes.",
            "A {num1}-turbine wind farm off the coast of {region} won final approval on {weekday}, "
            "ending a review that lasted more than three years and drew thousands of public "
            "comments.",
        ],
        "body": [
            "The project is expected to cost {money1} and create about {num2} jobs during "
            "construction.",
            "Fishing groups had raised concerns about the impact on fish stocks and access to "
            "traditional fishing grounds.",
            "The developer agreed to fund a monitoring programme for seabirds and marine mammals "
            "as a condition of approval.",
            "Construction is scheduled to begin next spring, with the first power delivered to "
            "the grid in about three years.",
            "The developer also plans a battery storage site near the landing point of the export "
            "cable, able to supply the city for {small1} hours at peak demand.",
            "Each turbine will stand more than {num2} metres tall, and the nearest will be about "
            "{small1}0 kilometres from shore, making them barely visible from the beach.",
            "Residents near the onshore cable route raised objections at public hearings, citing "
            "noise and traffic during construction.",
            "The government has set a goal of producing {renew}% of electricity from renewable "
            "sources by the end of the decade.",
            "Energy analysts said wholesale prices had already fallen as more renewable capacity "
            "came online this year.",
        ],
        "quotes": [
            '"This is a major step toward cleaner and cheaper power for the region," said '
            "energy minister {p1}.",
            "\"We are not against wind power, but our members' livelihoods depend on these "
            'waters," said {p2}, of the regional fishing association.',
            '"Projects like this only work if the grid can take the power, and we are ready for '
            "it,\" said {p3}, the grid operator's chief engineer.",
        ],
        "slots": {"renew": ["60", "70", "80", "90"]},
    },
    "airline": {
        "titles": [
            "{airline} cancels {num2} flights after computer outage",
            "Travel chaos at {city} airport as {airline} systems fail",
        ],
        "ledes": [
            "{airline} cancelled {num2} flights and delayed hundreds more on {weekday} after a "
            "failure in its crew scheduling system, stranding passengers at airports across the "
            "country.",
            "Long queues snaked through the terminals at {city} airport on {weekday} as a "
            "computer outage at {airline} grounded departures for most of the morning.",
        ],
        "body": [
            "The airline said the problem was caused by a faulty software update and was not the "
            "result of a cyberattack.",
            "Passengers whose flights were cancelled can rebook for free or request a full "
            "refund through the airline's website.",
            "Some travellers said they had waited more than {small1} hours at the gate without "
            "any information from staff.",
            "The disruption spread quickly because aircraft and crews ended up in the wrong "
            "places, leaving the airline unable to operate later flights even after the system "
            "came back.",
            "Airport officials brought in extra staff and set up cots in the departure hall for "
            "passengers who could not find a hotel room.",
            "The transport regulator said it would review the incident and reminded airlines of "
            "their obligation to compensate passengers for long delays.",
            "Shares in the parent company of {airline} fell {pct2}% by midday.",
            "Other carriers added larger aircraft on some busy routes to help move stranded "
            "customers.",
            "The airline expects to run a normal schedule by {weekday2}, although some delays "
            "are likely to continue.",
            "It was the second major technology failure in the industry this year, renewing "
            "questions about ageing systems at large carriers.",
        ],
        "quotes": [
            '"We are deeply sorry for the disruption to our customers\' travel plans," {airline} '
            "said in a statement.",
            "\"I am supposed to be at my sister's wedding tonight, and nobody can tell me when I "
            'will get there," said passenger {p2}.',
            '"Airlines need backup plans for exactly this kind of failure," said aviation '
            "analyst {p3}.",
        ],
        "slots": {
            "airline": [
                "Skyline Air",
                "Northstar Airways",
                "Pacific Crest Airlines",
                "Blue Heron Air",
                "TransValley Airlines",
            ]
        },
    },
    "court": {
        "titles": [
            "Court blocks {city} plan to close {num1} neighbourhood schools",
            "Judge halts {city} school closures, orders new consultation",
        ],
        "ledes": [
            "A judge on {weekday} temporarily blocked a plan by {city}'s school board to close "
            "{num1} neighbourhood schools, ruling that parents had not been properly consulted.",
            "{city}'s plan to shut {num1} schools was put on hold on {weekday} after a court "
            "found that the school board had failed to follow its own consultation rules.",
        ],
        "body": [
            "The board had argued that falling enrolment and rising maintenance costs left it "
            "with no choice but to consolidate schools.",
            "Parents' groups filed the lawsuit in the spring, saying meetings about the closures "
            "had been held at short notice and during working hours.",
            "In her ruling, the judge said the board must hold at least {small2} public meetings "
            "and publish detailed cost estimates before making a final decision.",
            "The closures would have affected about {num3} students, many of whom would have "
            "faced much longer journeys to school.",
            "The board said it was reviewing the decision and had not yet decided whether to "
            "appeal.",
            "Enrolment in the district has fallen by about {pct3}% over the past decade as "
            "families have moved to the suburbs.",
            "Several of the schools on the list serve neighbourhoods with high poverty rates, "
            "which critics said would be hit hardest.",
            "Teachers' union representatives, who supported the lawsuit, said the ruling gave "
            "the community a chance to propose alternatives.",
            "A final hearing in the case is scheduled for {later_month}.",
        ],
        "quotes": [
            '"This is a victory for every parent who was told their voice did not matter," '
            "said {p1}, who led the parents' coalition.",
            "\"We respect the court's decision, but the financial pressures have not gone "
            'away," said board chair {p2}.',
            '"The process is not a formality. The law expects real consultation," said {p3}, '
            "a lawyer for the families.",
        ],
        "slots": {},
    },
    "museum": {
        "titles": [
            "{city} museum reopens after {small1}-year, {money2} renovation",
            "Visitors return as {city}'s {museum} unveils new galleries",
        ],
        "ledes": [
            "The {museum} in {city} reopened to the public on {weekday} after a {small1}-year "
            "renovation that cost {money2} and added {num1} new galleries.",
            "Hundreds of visitors queued in the rain on {weekday} for the reopening of {city}'s "
            "{museum}, which has been closed for major repairs since {year_past}.",
        ],
        "body": [
            "The project replaced the building's leaking roof, installed modern climate control "
            "and made every floor accessible by lift for the first time.",
            "About {num3} objects are now on display, many of which had been kept in storage for "
            "decades.",
            "Highlights include a restored nineteenth-century steam engine and a collection of "
            "maps of the region dating back more than three hundred years.",
            "Entry to the permanent collection remains free, although special exhibitions carry "
            "a ticket charge.",
            "The museum expects about {num2},000 visitors in its first year, roughly double the "
            "number before it closed.",
            "A new cafe and education centre on the ground floor will host school groups and "
            "evening talks.",
            "Funding came from the city, a national heritage lottery fund and private donors, "
            "including a single gift of {money2}.",
            "Some local historians criticised the decision to remove a popular diorama, which "
            "the museum said was too fragile to restore.",
            "The opening weekend includes free guided tours, music and activities for children.",
        ],
        "quotes": [
            '"We wanted to keep the character of the old building while making it welcoming for '
            'everyone," said director {p1}.',
            '"I used to come here with my grandfather. It is wonderful to see it full of people '
            'again," said visitor {p2}.',
            '"Museums like this are part of what makes a city feel like home," said Mayor {p3}.',
        ],
        "slots": {
            "museum": [
                "City Museum",
                "Museum of Science and Industry",
                "Maritime Museum",
                "Museum of Local History",
                "Natural History Museum",
            ],
            "year_past": ["2019", "2020", "2021"],
        },
    },
    "tuition": {
        "titles": [
            "{university} to raise tuition by {pct4}% as costs climb",
            "Students protest fee rise at {university}",
        ],
        "ledes": [
            "{university} will raise tuition fees by {pct4}% next year, its governing board "
            "decided on {weekday}, citing rising staff costs and a drop in international "
            "enrolment.",
            "Several hundred students rallied outside the administration building at "
            "{university} on {weekday} to protest a planned {pct4}% increase in tuition.",
        ],
        "body": [
            "Annual fees for most undergraduate programmes will rise to about ${num3}, according "
            "to figures released by the university.",
            "The university said it would expand its financial aid budget so that students from "
            "lower-income families would not pay more.",
            "Student leaders said the increase would push more students into debt and force some "
            "to work longer hours alongside their studies.",
            "International enrolment has fallen by about {pct3}% since new visa rules were "
            "introduced last year, leaving a gap in the university's budget.",
            "The board also approved a hiring freeze for administrative staff and a review of "
            "underused buildings on campus.",
            "Faculty representatives said the university had spent heavily on new buildings "
            "while teaching budgets were squeezed.",
            "Fees at comparable universities in the region have risen by similar amounts over "
            "the past two years.",
            "The student union has called for a further protest next month and is collecting "
            "signatures for a petition.",
            "The increase still needs approval from the state education department, which is "
            "expected to rule by {later_month}.",
        ],
        "quotes": [
            '"Nobody wants to raise fees, but we have to balance the books," said university '
            "president {p1}.",
            '"We are being asked to pay more for larger classes and fewer services," said '
            "student union president {p2}.",
            '"Aid has to keep pace with fees, or access will suffer," said {p3}, a higher '
            "education policy researcher.",
        ],
        "slots": {
            "university": [
                "Lakeshore University",
                "University of {city}",
                "{city} State University",
                "Westbrook College",
            ]
        },
    },
}

# Invented companies, used by several topics.
EN_COMPANIES = [
    "Northwind Systems",
    "Bluepeak Software",
    "Corvane Group",
    "Halden Retail",
    "Ostara Bank",
    "Lumen Telecom",
    "Brightwell Energy",
    "Tessaro Networks",
    "Pinecrest Insurance",
    "Vantor Logistics",
]

# Syndication boilerplate.
EN_FOOTERS = [
    "Reporting by {p1}; Editing by {p2}",
    "Share this article\nFacebook · X · LinkedIn · Email",
    "Sign up for our morning newsletter to get the day's top stories in your inbox.",
    "Related coverage:\n- What the latest figures mean for your household\n- Five things to "
    "watch this week",
    "© {year} {outlet}. All rights reserved.",
    "Have a news tip? Contact our newsroom at tips@{domain}.",
]
EN_HEADERS = [
    "{CITY} ({agency}) -",
    "By {p1} | {outlet} | Updated {month} {day}, {year}",
    "{agency} | {month} {day}, {year}",
    "Advertisement",
]
EN_UPDATES = [
    "UPDATE: Officials released new figures late on {weekday} and said the situation was "
    "still developing. More details are expected at a news conference on Friday morning, "
    "and this article will be updated as new information becomes available.",
    "Editor's note: This story has been updated with additional reporting, including comments "
    "from local residents and a response from the agency involved, which had not replied to "
    "requests for comment when the article was first published.",
]
EN_CORRECTIONS = [
    "Correction: An earlier version of this article contained a spelling error in the "
    "second paragraph.",
    "This story has been corrected to fix typos.",
]
EN_TRUNCATIONS = ["... Read more", "[Continue reading]", "…"]
# Light edits: (original, replacement) pairs applied where they occur.
EN_EDITS = [
    ("said", "stated"),
    ("about", "around"),
    ("more than", "over"),
    ("on Monday", "Monday"),
    ("according to", "citing"),
    ("expected", "forecast"),
    ("however", "though"),
    ("officials", "authorities"),
    ("residents", "locals"),
    ("company", "firm"),
    ("several", "a number of"),
    ("began", "started"),
    ("warned", "cautioned"),
    ("help", "assist"),
    ("people", "residents"),
    ("rose", "climbed"),
    ("fell", "dropped"),
]

ZH_CITIES = [
    "杭州",
    "成都",
    "武汉",
    "西安",
    "南京",
    "长沙",
    "青岛",
    "郑州",
    "合肥",
    "昆明",
    "厦门",
    "沈阳",
    "苏州",
    "重庆",
    "天津",
    "济南",
    "福州",
    "南昌",
    "贵阳",
    "兰州",
]
ZH_SURNAMES = list("王李张刘陈杨黄赵吴周徐孙马朱胡郭何林罗高")
ZH_GIVEN = [
    "晓东",
    "丽娟",
    "志强",
    "海燕",
    "建华",
    "文静",
    "国平",
    "秀英",
    "明辉",
    "雪梅",
    "立新",
    "春生",
    "佳怡",
    "子涵",
    "宏伟",
    "玉兰",
    "浩然",
    "思远",
    "红霞",
    "永刚",
]
ZH_DISTRICTS = [
    "高新区",
    "经开区",
    "滨江区",
    "东湖新区",
    "城南片区",
    "老城区",
    "西部新城",
    "临空经济区",
    "科学城",
    "北部新区",
]
ZH_OUTLETS = [
    ("江城晚报", "jcwb.example.cn"),
    ("东方视点", "dfsd.example.cn"),
    ("今日财经", "jrcj.example.cn"),
    ("城市日报网", "csrb.example.cn"),
    ("华南新闻", "hnxw.example.cn"),
]
ZH_AGENCIES = ["华讯社", "东方通讯社", "中联网"]

ZH_TOPICS: dict[str, dict[str, list[str] | dict[str, list[str]]]] = {
    "metro": {
        "titles": [
            "{city}地铁{line}号线今日开通运营",
            "{city}轨道交通{line}号线正式通车 全长{km}公里",
            "{city}再添地铁新线 沿线市民出行更便捷",
        ],
        "ledes": [
            "{month}月{day}日上午，{city}地铁{line}号线正式开通初期运营。该线路全长约{km}公里，"
            "共设车站{n2}座，其中换乘站{n1}座。",
            "记者从{city}市轨道交通集团获悉，地铁{line}号线于{month}月{day}日开通运营，线路贯穿"
            "{district}和{district2}，全程运行时间约{n3}分钟。",
        ],
        "body": [
            "据介绍，{line}号线采用{n1}节编组列车，最高运行速度每小时{speed}公里，开通初期高峰"
            "时段行车间隔为{n1}分钟左右。",
            "开通首日，不少市民早早来到车站体验新线。家住{district}的市民{p1}告诉记者，以前上班"
            "要换乘两次公交，现在坐地铁二十多分钟就能到单位。",
            "为方便乘客出行，沿线各站均设置了无障碍电梯和母婴室，并支持刷码、刷卡及数字人民币等"
            "多种支付方式。",
            "{city}市交通运输局相关负责人表示，新线开通后，全市轨道交通运营里程达到{n4}公里，"
            "日均客运量有望突破{n3}0万人次。",
            "据了解，该线路建设历时近{n1}年，施工期间克服了穿越河道、老旧城区等多项技术难题。",
            "地铁运营方提醒，开通初期部分出入口暂未开放，乘客出行前可通过官方应用程序查询车站"
            "信息。",
            "沿线商户对新线开通充满期待。一家便利店店主{p2}说，地铁站就在门口，相信客流会明显"
            "增加。",
            "业内人士分析，轨道交通网络的持续完善，将进一步带动沿线土地开发和产业布局优化。",
            "此外，{city}还同步调整了{n2}条公交线路，加强地铁站与周边社区之间的接驳。",
            "新线沿线多个车站采用了节能照明和再生制动能量回收技术，预计每年可节约用电约{n4}万千瓦时。",
            "车站装修设计融入了{city}的历史文化元素，不少乘客拿出手机拍照留念。",
            "开通当天，志愿者在各站点为乘客提供购票指引和换乘咨询服务。",
            "根据规划，到{n1}年后，{city}轨道交通线网规模将进一步扩大，覆盖主要城区和重点功能区。",
        ],
        "quotes": [
            "“新线开通后，{district}到市中心的通勤时间将缩短一半左右。”{city}市轨道交通集团"
            "总工程师{p3}说。",
            "“我们会根据客流变化，及时优化运营组织，保障乘客安全、舒适出行。”运营分公司负责人"
            "{p3}表示。",
        ],
        "slots": {
            "line": ["3", "5", "6", "8", "9", "10", "12", "16"],
            "speed": ["80", "100", "120"],
        },
    },
    "economy": {
        "titles": [
            "一季度{city}地区生产总值同比增长{pct1}%",
            "{city}消费市场持续回暖 {last_month}月社零总额增长{pct2}%",
        ],
        "ledes": [
            "{city}市统计局{month}月{day}日发布数据，初步核算，一季度全市实现地区生产总值"
            "{n4}亿元，按不变价格计算，同比增长{pct1}%。",
            "记者从{city}市统计局获悉，{last_month}月份全市社会消费品零售总额同比增长{pct2}%，增速比"
            "上月加快{pct3}个百分点，消费市场持续回暖。",
        ],
        "body": [
            "分产业看，第一产业增加值同比增长{pct3}%，第二产业增长{pct4}%，第三产业增长{pct1}%。",
            "规模以上工业增加值同比增长{pct4}%，其中高技术制造业增长较快，对工业增长的贡献率"
            "超过四成。",
            "从消费结构看，升级类商品销售增势良好，新能源汽车、智能家电等商品零售额均实现两位数"
            "增长。",
            "固定资产投资保持稳定，基础设施投资同比增长{pct3}%，民间投资降幅较上季度有所收窄。",
            "居民消费价格指数同比上涨{pct3}%，其中食品价格有所回落，服务价格保持稳定。",
            "外贸方面，全市货物进出口总额{n3}亿元，其中出口增长{pct5}%，对共建“一带一路”国家进出口"
            "占比进一步提高。",
            "城镇新增就业{n2}万人，城镇调查失业率保持在合理区间。",
            "市统计局新闻发言人{p1}表示，总体来看，全市经济运行延续恢复向好态势，但外部环境"
            "仍然复杂多变，部分企业经营压力依然较大。",
            "餐饮收入增长明显，节假日期间商圈客流同比增长超过两成。",
            "从需求端看，网上零售额保持两位数增长，实物商品网上零售额占社会消费品零售总额的比重持续提升。",
            "房地产开发投资降幅继续收窄，新建商品房销售面积环比有所回升。",
            "全市规模以上服务业企业营业收入同比增长{pct5}%，信息传输、软件和信息技术服务业增势较好。",
            "一般公共预算收入同比增长{pct3}%，其中税收收入占比接近八成。",
        ],
        "quotes": [
            "“下一阶段，要继续扩大有效需求，巩固和增强经济回升向好态势。”{p1}说。",
            "{city}某高校经济学教授{p2}分析认为，消费和服务业的恢复是拉动本季度增长的主要动力。",
        ],
        "slots": {},
    },
    "weather": {
        "titles": [
            "{city}发布暴雨橙色预警 多地出现强降雨",
            "{city}遭遇强降雨 有关部门启动防汛应急响应",
        ],
        "ledes": [
            "受强降雨云团影响，{month}月{day}日凌晨起，{city}出现大范围强降雨，市气象台于当日"
            "{n1}时发布暴雨橙色预警信号。",
            "记者从{city}市气象台获悉，{month}月{day}日至{day2}日，全市出现今年入汛以来最强降雨"
            "过程，部分区域伴有雷暴大风和短时强降水。",
        ],
        "body": [
            "气象监测显示，截至当日上午八时，全市平均降雨量达{n3}毫米，其中{district}最大累计降雨"
            "量超过{n4}毫米。",
            "受降雨影响，城区部分低洼路段出现积水，交警部门已在现场疏导交通。",
            "市防汛抗旱指挥部已启动防汛四级应急响应，要求各区加强值班值守和隐患排查。",
            "气象专家提醒，此次降雨过程持续时间长、累计雨量大，山区要特别警惕滑坡和泥石流。",
            "受雷雨天气影响，部分航班出现延误，机场方面建议旅客出行前关注航班动态。",
            "教育部门通知，全市中小学和幼儿园当天停课一天，具体复课时间另行通知。",
            "农业农村部门提醒，种植户要及时清沟排水，抢收已成熟的农作物，减少灾害损失。",
            "电力部门组织{n2}支抢修队伍待命，确保一旦出现线路故障能够及时处置。",
            "预计未来三天仍有阵雨或雷阵雨，局部地区可能伴有短时强降水和雷暴大风。",
            "据了解，此次降雨过程是今年以来影响范围最广、强度最大的一次，多个气象站点日降雨量突破历史同期极值。",
            "城管部门出动排水人员{n4}余人次，对易涝点进行巡查，及时疏通排水管网。",
            "地铁部门对部分车站出入口加设防汛挡板，并准备了沙袋等防汛物资。",
            "水利部门密切关注河道水位变化，部分中小河流出现超警戒水位，已安排专人巡堤查险。",
        ],
        "quotes": [
            "“请市民尽量减少外出，远离河道、地下通道等危险区域。”市应急管理局相关负责人{p1}说。",
            "市气象台首席预报员{p2}表示，本轮天气过程影响范围广，需重点防范城市内涝和山洪灾害。",
        ],
        "slots": {},
    },
    "tech": {
        "titles": [
            "{company}发布新一代智能手机 主打影像与续航",
            "{company}新旗舰手机亮相{city} 起售价{price}元",
        ],
        "ledes": [
            "{month}月{day}日晚，{company}在{city}举行新品发布会，正式推出新一代旗舰智能手机，"
            "起售价{price}元。",
            "{company}{month}月{day}日在{city}发布年度旗舰手机，新机主打影像和续航，起售价{price}元，"
            "较上一代持平。",
        ],
        "body": [
            "新机搭载自研影像芯片，主摄像头采用一英寸大底传感器，夜景拍摄能力较上一代明显提升。",
            "电池容量提升至{n4}毫安时，支持{n3}瓦有线快充，官方称充满电仅需{n3}分钟左右。",
            "{company}相关负责人{p1}介绍，公司今年研发投入预计超过{n3}亿元，占营收比重进一步提高。",
            "据介绍，新机机身厚度控制在八毫米左右，重量约{n4}克，提供四种配色供消费者选择。",
            "业内人士认为，随着市场竞争加剧，厂商正从硬件参数比拼转向生态和服务的综合竞争。",
            "发布会上，{company}还推出了平板电脑、智能手表等多款产品，并宣布操作系统完成升级。",
            "第三方机构数据显示，今年前{n1}个月国内智能手机出货量同比增长{pct2}%，市场出现回暖迹象。",
            "新品将于本周五起在线上线下渠道同步开售，部分型号提供以旧换新补贴。",
            "新机还加入了端侧人工智能功能，支持通话实时翻译、照片智能消除等操作。",
            "在外观设计上，新机采用了新的中框工艺，机身边框更窄，握持手感有所改善。",
            "处理器方面，新机搭载最新一代旗舰芯片，综合性能较上代提升约{n3}%，功耗明显降低。",
            "发布会现场，不少数码爱好者排队试用新机，重点体验了长焦拍摄和夜景模式。",
            "市场研究机构预计，今年第四季度高端手机市场竞争将更加激烈，多家厂商将密集发布新品。",
        ],
        "quotes": [
            "“我们希望用技术创新，让用户真正感受到体验上的变化。”{company}总裁{p1}在发布会上说。",
            "科技行业分析师{p2}表示，国产厂商在影像和快充方面已经形成一定的技术优势。",
        ],
        "slots": {"price": ["3999", "4599", "5299", "5999", "6499"]},
    },
    "sports": {
        "titles": [
            "{team1}主场{s1}比{s2}击败{team2}",
            "联赛第{round}轮：{team1}逆转取胜 {team2}遭遇连败",
        ],
        "ledes": [
            "{month}月{day}日晚，职业联赛第{round}轮一场焦点战在{city}进行，{team1}凭借下半场的两个"
            "进球，以{s1}比{s2}战胜{team2}。",
            "在{day}日进行的职业联赛第{round}轮比赛中，{team1}客场挑战{team2}，双方鏖战九十分钟，最终"
            "{team1}以{s1}比{s2}取胜。",
        ],
        "body": [
            "上半场比赛双方互有攻守，{team2}第{minute1}分钟利用角球机会率先破门。",
            "易边再战，{team1}加强了边路进攻，前锋{p1}接队友传中头球扎死角扳平比分。",
            "比赛第{minute2}分钟，替补登场的{p2}禁区外远射得手，帮助球队反超比分。",
            "本场比赛现场观众超过{n4}00人，看台上气氛热烈。",
            "赛后，{team1}主教练{p3}表示，球员们执行了赛前的战术安排，下半场的调整起到了效果。",
            "此役过后，{team1}积分升至{points}分，暂列积分榜前三位。",
            "{team2}本场有两名主力因伤缺阵，防线多次出现失误。",
            "两队下一轮将分别迎战上海和北京的球队，赛程较为密集。",
            "技术统计显示，{team1}全场控球率达到{poss}%，射门次数明显多于对手。",
            "赛前，两队在积分榜上仅相差{gap}分，本场比赛被视为争夺前三名的关键一战。",
            "下半场第{minute3}分钟，{team2}一次反击机会中射门击中门柱，错失扳平良机。",
            "比赛中，主裁判通过视频助理裁判系统回看后，取消了{team2}的一粒进球。",
            "值得一提的是，{team1}本赛季主场保持不败，已连续{n1}个主场取得胜利。",
        ],
        "quotes": [
            "“这场胜利属于所有球员和支持我们的球迷。”{p3}在赛后新闻发布会上说。",
            "{team2}队长{p2}表示：“我们会尽快调整状态，争取在下一场比赛中拿到分数。”",
        ],
        "slots": {
            "team1": ["{city}城市", "{city}雄鹰", "{city}之星", "{city}猎豹"],
            "team2": ["江南联", "北岭雄狮", "东海蛟龙", "西山猎鹰", "南湖竞技"],
            "round": ["9", "12", "15", "18", "21", "24"],
            "minute1": ["12", "23", "31", "38"],
            "minute2": ["71", "76", "82", "87"],
            "minute3": ["56", "63", "68"],
            "poss": ["54", "58", "61", "63"],
            "points": ["28", "33", "37", "41"],
            "gap": ["1", "2", "3"],
            "s1": ["2", "3", "2", "1"],
            "s2": ["1", "1", "0", "0"],
        },
    },
    "gaokao": {
        "titles": [
            "{city}今年高考报名人数达{n3}万人",
            "{city}高考{month}月{day}日开考 多部门护航",
        ],
        "ledes": [
            "记者从{city}市教育考试院获悉，今年全市普通高考报名人数为{n3}万人，比去年增加约"
            "{n1}千人，考试将于{month}月{day}日开始。",
            "{month}月{day}日，{city}今年普通高考正式开考，全市{n3}万余名考生走进考场。",
        ],
        "body": [
            "全市共设{n2}个考区、{n4}个考场，所有考场均配备身份识别系统和无线电信号屏蔽设备。",
            "考试期间，公安、交通等部门在考点周边实施交通管制，为考生营造安静的考试环境。",
            "教育部门提醒考生提前熟悉考场，按规定时间入场，不得携带手机等电子设备。",
            "考点外，不少家长身穿红色衣服为孩子加油，志愿者为考生和家长提供饮用水和防暑药品。",
            "出租车公司组织{n2}0辆“爱心送考”车辆，免费接送有需要的考生。",
            "气象部门预计，考试期间全市以多云天气为主，最高气温在三十度左右。",
            "今年高考评卷工作将于考试结束后启动，考生可在{later_month}月下旬查询成绩。",
            "针对个别考生可能出现的突发情况，各考点均安排了医护人员和备用考场。",
            "今年报考人数中，应届毕业生约占七成，复读生和社会考生人数与去年基本持平。",
            "为保障考生用电，供电部门对所有考点实行双电源供电，并安排人员现场值守。",
            "市场监管部门加大对考点周边噪声的巡查力度，暂停建筑工地夜间施工。",
            "考试结束后，教育部门将组织专家对试卷进行评阅，并严格执行多评和复核制度。",
        ],
        "quotes": [
            "“我们将全力以赴做好考试组织和服务保障工作。”市教育考试院院长{p2}说。",
            "考生家长{p1}说：“孩子准备了三年，希望他正常发挥，考出好成绩。”",
        ],
        "slots": {},
    },
    "schools": {
        "titles": [
            "{city}新增中小学学位{n3}万个 缓解入学压力",
            "{city}今年新建改扩建中小学幼儿园{n3}所",
        ],
        "ledes": [
            "{city}市教育局{month}月{day}日召开新闻发布会，今年全市新建、改扩建中小学和幼儿园"
            "{n3}所，新增学位{n3}万个。",
            "新学期开学在即，{city}一批新建学校陆续完工。记者从市教育局了解到，今年全市共新增"
            "中小学和幼儿园学位{n3}万个。",
        ],
        "body": [
            "新增学位主要集中在{district}、{district2}等人口导入较快的区域。",
            "据了解，新学期全市还将继续推进集团化办学，扩大优质教育资源覆盖面。",
            "市教育局要求各校合理控制书面作业总量，小学一二年级不布置书面家庭作业。",
            "家长{p1}表示，新学校离家很近，孩子上学不用再起早赶路了。",
            "课后服务实现全覆盖，学校将开设科技、体育、艺术等{n2}类兴趣课程供学生自主选择。",
            "针对近视率上升的问题，学校将保证学生每天校内外体育活动时间不少于两小时。",
            "新建学校均按照标准配备了实验室、图书馆和风雨操场，部分学校还建设了屋顶农场。",
            "为补充师资，全市今年计划招聘中小学教师{n4}0余名，重点向新建学校倾斜。",
            "部分新建学校采用了装配式建筑技术，建设周期比传统方式缩短约三分之一。",
            "学校食堂全部实行“明厨亮灶”，家长可通过手机实时查看后厨情况。",
            "针对随迁子女入学，教育部门简化了入学材料，实行网上报名、网上审核。",
            "市教育局表示，将继续根据人口变化情况动态调整学校布局规划。",
        ],
        "quotes": [
            "“让每个孩子都能在家门口上好学，是我们的目标。”市教育局副局长{p3}表示。",
            "一所新建小学的校长{p2}说：“我们希望把学校办成孩子们喜欢的乐园。”",
        ],
        "slots": {},
    },
    "harvest": {
        "titles": [
            "{province}{county}夏粮喜获丰收 农机手忙抢收",
            "{province}小麦机收进度过半 已收获{n4}万亩",
        ],
        "ledes": [
            "眼下正值夏收时节，在{province}{county}的麦田里，一台台联合收割机来回穿梭，金色的麦浪"
            "间一派丰收景象。",
            "记者从{province}农业农村厅获悉，截至{month}月{day}日，全省小麦已收获{n4}万亩，"
            "机收率超过{n3}%。",
        ],
        "body": [
            "今年全省小麦播种面积稳定在{n4}万亩以上，由于气象条件总体有利，预计单产将略有提高。",
            "种粮大户{p1}算了一笔账：今年自家{n4}亩小麦亩产超过一千斤，扣除成本后收入比去年多了"
            "不少。",
            "为确保颗粒归仓，当地组织{n4}台联合收割机跨区作业，并开通农机转移绿色通道。",
            "农业技术人员介绍，推广使用的新品种抗倒伏能力强，加上统防统治，病虫害得到有效控制。",
            "烘干设备的普及有效解决了“烂场雨”带来的晾晒难题，减少了粮食损失。",
            "粮食收购企业已全面开秤，收购价格总体平稳，部分优质小麦价格略高于去年同期。",
            "当地还通过土地托管等方式，把分散的土地集中起来，实现规模化、机械化种植。",
            "在收获后的农田里，播种机紧随其后，开始抢种玉米和大豆。",
            "气象部门提前发布收获期天气预报，帮助农户合理安排收割时间。",
            "在当地一家粮食收储库，前来卖粮的车辆排起长队，工作人员正在对小麦进行扦样检测。",
            "今年当地推广“一喷三防”技术，有效预防了干热风等灾害对小麦灌浆的影响。",
            "农机合作社负责人{p3}介绍，合作社今年新添了{n1}台大型收割机，每天可收割小麦上千亩。",
            "随着高标准农田建设推进，当地田块更加平整，灌排设施更加完善，为粮食稳产增产打下基础。",
        ],
        "quotes": [
            "“现在种地靠机械、靠科技，省心多了。”{p1}笑着说。",
            "“我们将全力做好夏收夏种工作，确保全年粮食生产稳定。”{province}农业农村厅负责人{p2}表示。",
        ],
        "slots": {
            "province": ["河南", "山东", "安徽", "河北", "江苏"],
            "county": ["滑县", "商水县", "临泉县", "宁津县", "东海县", "永城市"],
        },
    },
    "tourism": {
        "titles": [
            "假期首日{city}接待游客{n3}万人次",
            "{city}文旅市场持续火热 夜间经济成新亮点",
        ],
        "ledes": [
            "假期首日，{city}各大景区迎来客流高峰。据市文化和旅游局统计，当日全市重点景区共接待"
            "游客{n3}万人次，同比增长{pct2}%。",
            "随着气温回升，{city}文旅市场持续升温，古街、夜市和博物馆成为游客打卡的热门去处。",
        ],
        "body": [
            "在{district}的历史文化街区，游客摩肩接踵，不少人身着汉服拍照留念。",
            "为应对大客流，多家景区实行分时段预约，并增派工作人员引导游客有序游览。",
            "博物馆延长开放时间，部分热门展览的预约名额在开放后几分钟内就被抢完。",
            "来自外地的游客{p1}说，这次专门带着家人来看灯会，当地的小吃也很有特色。",
            "全市推出{n2}条精品旅游线路，并发放文旅消费券，带动餐饮、住宿等消费增长。",
            "据在线旅游平台数据，{city}位列假期热门目的地前十，酒店预订量同比增长超过三成。",
            "夜间消费成为新亮点，{district}的夜市每晚吸引数万名市民和游客。",
            "交通部门增开公交专线，连接火车站、机场与主要景区，方便游客出行。",
            "市场监管部门加强巡查，严厉打击价格欺诈、强制消费等违法行为。",
            "不少景区推出了沉浸式演出和夜游项目，让游客在夜色中感受城市的独特魅力。",
            "铁路部门加开临时旅客列车{n2}趟，进出{city}的铁路客流持续处于高位。",
            "乡村旅游同样火热，周边农家乐和采摘园的预订量明显增加。",
            "文化和旅游部门发布提示，建议游客错峰出行，提前预约，理性消费。",
        ],
        "quotes": [
            "“我们希望游客不仅来得了，还要留得住、玩得好。”市文化和旅游局局长{p2}表示。",
            "一家民宿的负责人{p3}说：“假期房间早就订满了，我们提前一个月就开始准备。”",
        ],
        "slots": {},
    },
    "ev": {
        "titles": [
            "{last_month}月新能源汽车销量同比增长{pct1}%",
            "{city}新能源汽车保有量突破{n3}万辆 充电设施加快建设",
        ],
        "ledes": [
            "据行业协会最新数据，{last_month}月国内新能源汽车产销量分别完成{n3}万辆和{n3}万辆，同比"
            "分别增长{pct1}%和{pct2}%，市场渗透率继续提高。",
            "记者从{city}市公安局交通管理局获悉，截至{last_month}月底，全市新能源汽车保有量突破{n3}万辆，"
            "占汽车总量的比例接近两成。",
        ],
        "body": [
            "从细分市场看，插电式混合动力车型销量增长较快，成为拉动市场的重要力量。",
            "出口方面，新能源汽车出口量保持增长势头，欧洲和东南亚是主要出口市场。",
            "快充技术不断进步，部分新车型充电十五分钟即可补充约{n4}公里的续航。",
            "{company}方面表示，今年以来公司累计交付新车{n2}万辆，同比增长超过一倍。",
            "业内人士指出，价格竞争仍在持续，车企需要在成本控制和技术创新之间寻找平衡。",
            "{city}今年计划新建公共充电桩{n3}千个，基本实现城区充电服务半径不超过一公里。",
            "动力电池价格下降，使得中低价位车型的竞争力明显增强。",
            "多地出台以旧换新补贴政策，进一步激发了消费者的购车热情。",
            "部分车主反映，高速公路服务区节假日充电排队时间较长，充电设施布局仍需优化。",
            "统计数据显示，今年以来新能源汽车累计销量已超过去年全年的{n3}%。",
            "多家车企推出了限时优惠和金融贴息政策，进一步降低了消费者的购车门槛。",
            "在智能化方面，辅助驾驶功能逐渐成为新车的标配，受到年轻消费者的青睐。",
            "业内人士预计，随着充电网络不断完善和电池技术进步，新能源汽车在三四线城市和农村市场还有较大增长空间。",
        ],
        "quotes": [
            "“今年新能源汽车市场有望继续保持较快增长。”行业协会副秘书长{p1}说。",
            "车主{p2}说：“现在小区里就能充电，电费比油费便宜不少。”",
        ],
        "slots": {"price": ["15.98", "18.88", "21.99", "24.68", "13.58"]},
    },
    "health": {
        "titles": [
            "{city}扩大门诊费用跨省直接结算范围",
            "{city}新增{n1}种慢性病纳入医保门诊保障",
        ],
        "ledes": [
            "记者从{city}市医疗保障局获悉，自{month}月{day}日起，全市{n3}家定点医疗机构全部开通"
            "门诊费用跨省直接结算服务。",
            "{city}市医疗保障局{month}月{day}日发布消息，自下月起，全市将新增{n1}种慢性病纳入医保"
            "门诊慢特病保障范围，预计惠及{n3}万参保群众。",
        ],
        "body": [
            "参保人员在异地就医时，只需完成备案，即可在医院直接结算，无需先垫付再回参保地报销。",
            "此次调整后，高血压、糖尿病等慢性病患者在门诊用药的报销比例提高到{n3}%。",
            "新纳入的病种包括慢性阻塞性肺疾病、类风湿关节炎等，患者在门诊的用药费用可按规定报销。",
            "退休职工{p1}说，以前在外地看病要来回跑好几趟报销，现在出院时直接结算，方便多了。",
            "医保部门将加强基金监管，严厉打击欺诈骗保行为，确保医保基金安全。",
            "参保群众可通过医保服务平台或手机应用程序在线办理异地就医备案，最快当天即可办结。",
            "据统计，今年以来全市异地就医直接结算已惠及{n2}万人次，减少群众垫付资金{n3}亿元。",
            "专家表示，推进分级诊疗，有助于缓解大医院就诊压力，让常见病在基层得到解决。",
            "医保部门还将进一步扩大定点药店范围，方便参保人员就近购药。",
            "据介绍，本次政策调整后，参保人员个人负担的医疗费用预计将下降约{n2}%。",
            "为防止出现“看病难、报销慢”问题，医保部门将定期对定点医疗机构的结算情况进行督导检查。",
            "下一步，{city}还将推进医保电子凭证在全市各级医疗机构的全流程应用。",
        ],
        "quotes": [
            "“我们的目标是让参保群众少跑腿、少垫钱。”市医疗保障局副局长{p2}表示。",
            "一家三甲医院医保办主任{p3}说：“直接结算开通以来，窗口排队的患者明显减少了。”",
        ],
        "slots": {},
    },
    "launch": {
        "titles": [
            "{rocket}运载火箭成功发射{sat}卫星",
            "一箭{n1}星！{rocket}火箭发射任务取得圆满成功",
        ],
        "ledes": [
            "{month}月{day}日{hour}时{minute}分，我国在{site}使用{rocket}运载火箭，成功将{sat}卫星发射"
            "升空，卫星顺利进入预定轨道，发射任务获得圆满成功。",
            "{month}月{day}日，{rocket}运载火箭在{site}点火升空，以“一箭{n1}星”方式将多颗卫星送入"
            "预定轨道。",
        ],
        "body": [
            "据介绍，该卫星主要用于国土资源普查、城市规划、农作物估产和防灾减灾等领域。",
            "此次发射的卫星由中国航天科技集团有限公司所属研究院研制，设计寿命为{n1}年。",
            "{rocket}运载火箭是一型常温液体三级运载火箭，具备发射多种轨道卫星的能力。",
            "火箭起飞约{n3}分钟后，星箭分离，卫星太阳帆板顺利展开。",
            "这是{rocket}系列运载火箭的第{n4}次飞行，也是今年以来我国航天发射的第{n2}次任务。",
            "卫星入轨后，将与在轨卫星组网运行，进一步提升数据获取能力和观测效率。",
            "当天，不少航天爱好者聚集在发射场附近的观景点，用相机记录下火箭升空的壮观场面。",
            "发射场区气象保障团队提前开展了连续观测，确保发射窗口期天气条件满足要求。",
            "近年来，我国商业航天发展迅速，发射频次和发射能力均实现较大提升。",
            "据了解，后续还将有多颗同系列卫星陆续发射，逐步构建完整的观测体系。",
            "这次任务还搭载了{n1}颗由高校研制的小卫星，用于开展空间科学试验。",
            "地面测控系统全程跟踪火箭飞行状态，各项数据显示一切正常。",
        ],
        "quotes": [
            "“火箭飞行正常，卫星入轨精度高。”任务总指挥{p1}在发射成功后说。",
            "航天专家{p2}表示，这次发射进一步验证了火箭的可靠性，为高密度发射积累了经验。",
        ],
        "slots": {
            "rocket": ["长征二号丁", "长征四号丙", "长征六号", "长征二号丙", "快舟一号甲"],
            "site": ["酒泉卫星发射中心", "太原卫星发射中心", "西昌卫星发射中心"],
            "sat": ["遥感四十号", "资源三号04星", "高分十二号", "天启星座", "试验二十五号"],
            "hour": ["9", "11", "14", "16", "21"],
            "minute": ["06", "18", "37", "45"],
        },
    },
    "property": {
        "titles": [
            "{city}{last_month}月新房成交面积环比增长{pct2}%",
            "{city}出台楼市新政 优化住房公积金贷款政策",
        ],
        "ledes": [
            "记者从{city}市房地产交易中心获悉，{last_month}月全市新建商品住宅成交{n2}万平方米，环比增长"
            "{pct2}%，二手房成交量也有所回升。",
            "{city}市住房和城乡建设局{month}月{day}日发布通知，进一步优化住房公积金贷款政策，"
            "多子女家庭购买首套住房时，公积金贷款最高额度可上浮{n2}%。",
        ],
        "body": [
            "从成交结构看，改善型住房占比提高，九十平方米以上户型成交面积占比超过六成。",
            "多家房企加快推盘节奏，并推出限时折扣、送车位等优惠措施吸引购房者。",
            "二手房市场挂牌量仍处于高位，部分区域房价继续小幅下调，买方议价空间较大。",
            "中介门店负责人{p1}说，近期到店咨询的客户明显增多，但多数购房者仍以观望为主。",
            "此次政策调整还明确，缴存职工在本市购买新建商品住房的，可提取公积金支付首付款。",
            "业内人士认为，随着一系列支持政策落地，楼市有望逐步企稳，但恢复仍需要一定时间。",
            "在土地市场方面，{last_month}月全市共成交住宅用地{n1}宗，成交楼面价与去年同期基本持平。",
            "{city}还将加快保障性住房建设，今年计划筹集保障性租赁住房{n3}00套。",
            "从区域看，{district}、{district2}等新城区成交较为活跃，中心城区则以二手房交易为主。",
            "银行方面，首套房贷利率已降至历史较低水平，部分银行放款周期缩短至两周以内。",
            "房管部门提醒购房者，要认真核查项目预售许可情况，通过正规渠道签订合同。",
            "有关部门将加强对商品房预售资金的监管，切实保障购房人合法权益。",
        ],
        "quotes": [
            "“政策的目的是更好满足居民刚性和改善性住房需求。”市住房和城乡建设局相关负责人{p2}表示。",
            "刚刚签约购房的市民{p3}说：“利率降了，公积金额度也提高了，压力小了不少。”",
        ],
        "slots": {},
    },
}

ZH_COMPANIES = ["星海科技", "云帆智能", "华锐电子", "启明汽车", "蓝图新能源", "远航数码"]
ZH_HEADERS = [
    "{agency}{city}{month}月{day}日电（记者 {p1}）",
    "本报讯（记者 {p1} 通讯员 {p2}）",
    "来源：{outlet} 发布时间：{year}-{mm}-{dd}",
    "【{outlet}】",
]
ZH_FOOTERS = [
    "（完）",
    "【责任编辑：{p1}】",
    "（编辑 {p1} 校对 {p2}）",
    "分享到：微信 微博 QQ空间",
    "本文来源：{outlet}。转载请注明出处。",
    "更多精彩内容，请关注{outlet}客户端。",
]
ZH_UPDATES = [
    "【最新消息】截至发稿时，相关部门又公布了最新情况。记者将持续关注后续进展，"
    "并第一时间进行报道。",
    "相关链接：近年来，该地区持续加大投入，相关工作取得明显成效，群众满意度不断提升。",
]
ZH_CORRECTIONS = ["（本文已更正错别字）", "更正：此前版本中有文字错误，现已修改。"]
ZH_TRUNCATIONS = ["……（阅读全文）", "点击查看全文>>", "……"]
ZH_EDITS = [
    ("表示", "指出"),
    ("目前", "当前"),
    ("记者", "本报记者"),
    ("市民", "居民"),
    ("据介绍", "据悉"),
    ("明显", "显著"),
    ("进一步", "更加"),
    ("同比增长", "比上年同期增长"),
    ("超过", "逾"),
    ("提醒", "提示"),
    ("此外", "另外"),
    ("不少", "许多"),
]
# Common typos (original, wrong) used for "published with typos, then corrected" pairs.
ZH_TYPOS = [("的", "得"), ("在", "再"), ("已", "以"), ("做", "作"), ("部", "步"), ("象", "像")]
